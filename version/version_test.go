package version

import (
	"runtime/debug"
	"testing"
)

func TestInfoOf(t *testing.T) {
	const rev = "4d08fb4c0ffee0000000000000000000000000aa"
	vcs := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26.8"}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, tc := range []struct {
		name   string
		stamps stamps
		bi     *debug.BuildInfo
		want   Info
	}{
		{"no build information: only the release", stamps{release: "v0.1.0"}, nil,
			Info{Release: "v0.1.0", GoVersion: "go-runtime", Platform: "linux/amd64"}},
		{"a build from a checkout: commit and date from the VCS settings", stamps{release: "v0.1.0"},
			vcs("vcs", "git", "vcs.revision", rev, "vcs.time", "2026-12-07T02:00:00Z", "vcs.modified", "false"),
			Info{Release: "v0.1.0", Revision: rev, Date: "2026-12-07T02:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"a modified work tree says so", stamps{release: "v0.1.0"},
			vcs("vcs.revision", rev, "vcs.time", "2026-12-07T02:00:00Z", "vcs.modified", "true"),
			Info{Release: "v0.1.0", Revision: rev, Date: "2026-12-07T02:00:00Z", Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"a build with -buildvcs=false: nothing known of the commit", stamps{release: "v0.1.0"}, vcs("-buildvcs", "false"),
			Info{Release: "v0.1.0", GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"a release build: the stamps win", stamps{"v0.2.0", "abc123", "2026-12-01T00:00:00Z"},
			vcs("vcs.revision", rev, "vcs.time", "2026-12-07T02:00:00Z", "vcs.modified", "true"),
			Info{Release: "v0.2.0", Revision: "abc123", Date: "2026-12-01T00:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"a stamped commit the toolchain saw too: its modified flag holds", stamps{"v0.2.0", rev, ""},
			vcs("vcs.revision", rev, "vcs.time", "2026-12-07T02:00:00Z", "vcs.modified", "true"),
			Info{Release: "v0.2.0", Revision: rev, Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"a stamped commit without a date: the date is not taken from another commit", stamps{"v0.2.0", "abc123", ""},
			vcs("vcs.revision", rev, "vcs.time", "2026-12-07T02:00:00Z"),
			Info{Release: "v0.2.0", Revision: "abc123", GoVersion: "go1.26.8", Platform: "linux/amd64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := infoOf(tc.stamps, tc.bi, "go-runtime", "linux/amd64"); got != tc.want {
				t.Errorf("infoOf = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
}
