package version

import (
	"runtime"
	"runtime/debug"
)

// What a release build stamps with -ldflags "-X <var>=<value>" (the
// release workflow's .goreleaser.yaml, the Makefile's build), for example
//
//	-X github.com/cairn-dev/cairn/version.Release=v0.2.0
//	-X github.com/cairn-dev/cairn/version.Commit=<40 hex digits>
//	-X github.com/cairn-dev/cairn/version.Date=2026-12-07T02:22:25Z
//
// A build without them (go build, go install from a checkout) takes the
// commit and its date from the build information the Go toolchain
// records (vcs.revision, vcs.time), when it records them.
var (
	// Release is the release this build calls itself, and the tag of the
	// cairn image the renderer names by default.
	Release = "v0.1.0"
	// Commit is the commit the binary was built from; "" to take it from
	// the build information.
	Commit = ""
	// Date is when that commit was made (RFC 3339); "" to take it from
	// the build information.
	Date = ""
)

// Info describes one build.
type Info struct {
	// Release is the release name (Release).
	Release string `json:"version"`
	// Revision is the commit the binary was built from, "" when neither
	// the ldflags nor the build information name one (go run, go test, a
	// build outside Git or with -buildvcs=false).
	Revision string `json:"commit,omitempty"`
	// Date is the commit's date (RFC 3339), "" when unknown.
	Date string `json:"date,omitempty"`
	// Modified reports uncommitted changes in the build's work tree (only
	// known from the build information).
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns this binary's Info.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return infoOf(stamps{Release, Commit, Date}, bi, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
}

// stamps are the values -ldflags set.
type stamps struct{ release, commit, date string }

// infoOf is the Info of a build: what the ldflags stamped first, then
// the build information's VCS settings (bi may be nil).
func infoOf(s stamps, bi *debug.BuildInfo, goVersion, platform string) Info {
	info := Info{Release: s.release, Revision: s.commit, Date: s.date, GoVersion: goVersion, Platform: platform}
	if bi == nil {
		return info
	}
	var rev, at string
	modified := false
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			at = kv.Value
		case "vcs.modified":
			modified = kv.Value == "true"
		}
	}
	if info.Revision == "" {
		info.Revision, info.Modified = rev, modified
		if info.Date == "" {
			info.Date = at
		}
	} else if info.Revision == rev {
		// The stamped commit is the one the toolchain saw: what it saw of
		// the work tree holds too.
		info.Modified = modified
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	return info
}
