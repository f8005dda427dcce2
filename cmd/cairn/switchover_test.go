package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// switchoverSpec is db's spec as a person wrote it: comments, a blank
// line and four-space indentation that cairn switchover must keep.
const switchoverSpec = `# the payments database
apiVersion: "db.example.com/v1alpha1"
kind: "PostgresCluster"
metadata:
  name: "db"
spec:
    version: "14.5"   # minor upgrades: see the runbook

    instances: 3
    storage: "10Gi"
`

// switchoverAsked is switchoverSpec with the request cairn switchover
// writes: nothing else changes.
const switchoverAsked = switchoverSpec + `    switchover:
        to: "db-2"
        id: "maint-1"
`

// A converged db of three members, db-0 primary.
const switchoverLive = `apiVersion: cairn.dev/v1alpha1
kind: LiveState
clusters:
  - kind: PostgresCluster
    name: db
    storage: 10Gi
    network: restricted
    tls: require
    runtime: {readOnlyRootFilesystem: true}
    statefulSet: {readOnlyRootFilesystem: true, replicas: 3, updatePartition: 0, version: "14.5"}
    bootstrap: existing
    members:
      - {name: db-0, version: "14.5", ready: true, role: primary, tls: true}
      - {name: db-1, version: "14.5", ready: true, role: replica, tls: true}
      - {name: db-2, version: "14.5", ready: true, role: replica, tls: true}
`

func switchoverRepo() map[string]string {
	return map[string]string{"clusters/db.yaml": switchoverSpec, "clusters/kv.yaml": "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: kv}\nspec: {size: 3, version: \"3.5.21\"}\n"}
}

// cairn switchover against a real git server over HTTP and the GitHub
// test server: one spec pull request, on a branch whose only change is
// the request's lines; run again, it adopts that pull request. Merged, it
// plans the switchover step.
func TestSwitchoverOpensASpecPullRequestOnGitHub(t *testing.T) {
	url, bare := gitbed.Serve(t, gitUser, gitToken, switchoverRepo())
	gh := githubtest.New(t)
	gh.UseRepo(bare)
	secrets := t.TempDir()
	gitTokenFile, ghTokenFile := filepath.Join(secrets, "git"), filepath.Join(secrets, "gh")
	_ = os.WriteFile(gitTokenFile, []byte(gitToken+"\n"), 0o600)
	_ = os.WriteFile(ghTokenFile, []byte(gh.Token+"\n"), 0o600)
	args := []string{"switchover", "db", "--to", "db-2", "--id", "maint-1", "--repo", url, "--token-file", gitTokenFile,
		"--github", "org/gitops", "--github-api", gh.URL + "/", "--github-token-file", ghTokenFile}
	branch := publish.SpecBranch("db", "switchover-maint-1")

	code, out, errOut := cairn(t, args...)
	if code != exitOK || errOut != "" || !strings.Contains(out, "opened pull request #1 "+branch+", on GitHub org/gitops") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	open := gh.Open()
	if len(open) != 1 || open[0].Head.Ref != branch || open[0].Base.Ref != "main" || open[0].Title != "Switch over db to db-2 (spec.switchover maint-1)" {
		t.Fatalf("pull requests: %+v", open)
	}
	body := open[0].Body
	for _, want := range []string{"changes only the spec", "Merging it changes nothing in the cluster by itself", "no committed transaction is lost", "served once"} {
		if !strings.Contains(body, want) {
			t.Errorf("the body does not say %q:\n%s", want, body)
		}
	}
	for _, secret := range []string{gitToken, gh.Token} {
		if strings.Contains(body, secret) || strings.Contains(out, secret) {
			t.Errorf("a token is in the body or the output")
		}
	}
	files := gitbed.Files(t, bare, branch, "clusters/")
	if files["clusters/db.yaml"] != switchoverAsked || files["clusters/kv.yaml"] != switchoverRepo()["clusters/kv.yaml"] || len(files) != 2 {
		t.Fatalf("the branch's specs:\n%v", files)
	}
	head := gitbed.Head(t, bare, branch)

	// Again: the same branch and pull request, nothing new.
	if code, out, errOut := cairn(t, args...); code != exitOK || !strings.Contains(out, "#1 "+branch) {
		t.Fatalf("again: exit %d:\n%s%s", code, out, errOut)
	}
	if open := gh.Open(); len(open) != 1 || gitbed.Head(t, bare, branch) != head {
		t.Fatalf("again: %d open, head %s (was %s)", len(open), gitbed.Head(t, bare, branch), head)
	}

	// Merged, the spec plans the switchover as a step of its own.
	gitbed.Merge(t, bare, branch)
	checkout := t.TempDir()
	gitbed.WriteFiles(t, checkout, gitbed.Files(t, bare, "main", "clusters/"))
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	_ = os.WriteFile(liveFile, []byte(switchoverLive), 0o644)
	code, out, errOut = cairn(t, "plan", "--repo", checkout, "--live", liveFile)
	if code != exitOK || !strings.Contains(out, "switchover-to-2-maint-1") || !strings.Contains(out, "from db-0 to db-2") {
		t.Fatalf("plan: exit %d:\n%s%s", code, out, errOut)
	}
}

// With the local provider (a repo with no GitHub), the pull request is
// recorded in the repo; with --write the checkout's file is edited and
// nothing is committed.
func TestSwitchoverLocal(t *testing.T) {
	bare := gitbed.New(t, switchoverRepo())
	branch := publish.SpecBranch("db", "switchover-maint-1")
	if code, out, errOut := cairn(t, "switchover", "db", "--to", "db-2", "--id", "maint-1", "--repo", bare); code != exitOK || !strings.Contains(out, "opened pull request "+branch+", recorded in the repo") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if _, list, _ := cairn(t, "pr", "list", "--repo", bare); !strings.Contains(list, branch) {
		t.Fatalf("pr list:\n%s", list)
	}
	if got := gitbed.Files(t, bare, branch, "clusters/")["clusters/db.yaml"]; got != switchoverAsked {
		t.Fatalf("the branch's spec:\n%s", got)
	}
	if got := gitbed.Files(t, bare, "main", "clusters/")["clusters/db.yaml"]; got != switchoverSpec {
		t.Fatalf("main changed:\n%s", got)
	}

	checkout := t.TempDir()
	gitbed.WriteFiles(t, checkout, switchoverRepo())
	code, out, errOut := cairn(t, "switchover", "db", "--to", "db-2", "--id", "maint-1", "--repo", checkout, "--write")
	if code != exitOK || !strings.Contains(out, "wrote spec.switchover (to db-2, id maint-1) into clusters/db.yaml") {
		t.Fatalf("--write: exit %d:\n%s%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(checkout, "clusters", "db.yaml")); string(got) != switchoverAsked {
		t.Fatalf("--write wrote:\n%s", got)
	}
	// The same request again changes nothing, and says so.
	if code, _, errOut := cairn(t, "switchover", "db", "--to", "db-2", "--id", "maint-1", "--repo", checkout, "--write"); code != exitInvalid || !strings.Contains(errOut, "asks for this switchover already") {
		t.Fatalf("again: exit %d: %s", code, errOut)
	}
}

// Mistakes are refused before anything is written, saying what is wrong.
func TestSwitchoverMistakes(t *testing.T) {
	checkout := t.TempDir()
	gitbed.WriteFiles(t, checkout, switchoverRepo())
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no --to", []string{"db"}, exitUsage, `required flag(s) "to" not set`},
		{"another cluster's member", []string{"db", "--to", "kv-1"}, exitUsage, `--to "kv-1" is not a member of db: members are named db-0, db-1, ...`},
		{"a bad id", []string{"db", "--to", "db-1", "--id", "Maint"}, exitUsage, "--id must be 1 to 40 lowercase letters"},
		{"beyond instances", []string{"db", "--to", "db-3"}, exitInvalid, "clusters/db.yaml:12:13: spec.switchover.to: db-3 is beyond spec.instances (3)"},
		{"an etcd cluster", []string{"kv", "--to", "kv-1"}, exitInvalid, "kv is of kind EtcdCluster: only a PostgresCluster takes a switchover"},
		{"no such cluster", []string{"nosuch", "--to", "nosuch-1"}, exitInvalid, "no spec of cluster nosuch under clusters/ of the repo"},
		{"--write with --github", []string{"db", "--to", "db-1", "--github", "org/gitops"}, exitUsage, "--write edits a checkout and opens no pull request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"switchover"}, c.args...), "--repo", checkout, "--write")
			code, _, errOut := cairn(t, args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, want %d; stderr %q, want it to say %q", code, c.code, errOut, c.want)
			}
			if got, _ := os.ReadFile(filepath.Join(checkout, "clusters", "db.yaml")); string(got) != switchoverSpec {
				t.Fatalf("the spec changed:\n%s", got)
			}
		})
	}
}
