package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// cairn check with a token GitHub refuses (401) says so whatever the
// specs: beside their errors, beside their plan; the exit code stays the
// check's own, or is a failure when the check passed.
func TestCheckReportsGitHubFailuresBesideSpecErrors(t *testing.T) {
	bare := gitbed.New(t, kvSpec("  size: 3\n  version: \"3.7.3\"\n"))
	gh := githubtest.New(t)
	gh.UseRepo(bare)
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	_ = os.WriteFile(liveFile, []byte(kvLive), 0o644)
	for _, tc := range []struct {
		name, size, token string
		code              int
		want              []string // in stderr or stdout
	}{
		{"invalid specs, a bad token", "8", "ghs_wrong", exitInvalid, []string{"spec.size", "401 Bad credentials", "report on pull request #1 of org/gitops"}},
		{"valid specs, a bad token", "5", "ghs_wrong", exitInvalid, []string{"etcd-add-3", "401 Bad credentials"}},
		{"invalid specs, a good token", "8", gh.Token, exitInvalid, []string{"spec.size"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work, sha := personBranch(t, bare, "people/kv-"+tc.size+tc.token, kvSpec("  size: "+tc.size+"\n  version: \"3.7.3\"\n"))
			tokenFile := filepath.Join(t.TempDir(), "gh")
			_ = os.WriteFile(tokenFile, []byte(tc.token), 0o600)
			code, out, errOut := cairn(t, "check", "--repo", work, "--live", liveFile, "--github", "org/gitops", "--github-api", gh.URL+"/",
				"--github-token-file", tokenFile, "--pr", "1", "--sha", sha)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("%q not said:\n%s%s", w, out, errOut)
				}
			}
			if tc.token == gh.Token && strings.Contains(errOut, "401") {
				t.Errorf("a good token reported refused:\n%s", errOut)
			}
			if strings.Contains(out+errOut, tc.token) && tc.token != gh.Token {
				t.Errorf("the token is shown:\n%s%s", out, errOut)
			}
		})
	}
}
