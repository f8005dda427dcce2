package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// A converged 3-member etcd cluster "kv" with 8Gi volumes.
const kvLive = `apiVersion: cairn.dev/v1alpha1
kind: LiveState
clusters:
  - kind: EtcdCluster
    name: kv
    runtime: {readOnlyRootFilesystem: true}
    statefulSet: {readOnlyRootFilesystem: true, replicas: 3, updatePartition: 0, version: "3.7.3"}
    storage: 8Gi
    network: restricted
    tls: require
    clusterVersion: "3.7"
    compaction: {mode: periodic, retention: 1h, applied: true}
    bootstrap: existing
    members:
      - {name: kv-0, version: "3.7.3", ready: true, role: leader, tls: true, peerTLS: true}
      - {name: kv-1, version: "3.7.3", ready: true, role: follower, tls: true, peerTLS: true}
      - {name: kv-2, version: "3.7.3", ready: true, role: follower, tls: true, peerTLS: true}
`

func kvSpec(extra string) map[string]string {
	return map[string]string{"clusters/kv.yaml": "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: kv\nspec:\n" + extra}
}

// Walkthrough 5: bad spec edits pushed to the base branch open no pull
// request and push no branch; the error or refusal says where and why.
func TestBadSpecEditsOpenNoPullRequest(t *testing.T) {
	ctx := context.Background()
	bare := gitbed.New(t, kvSpec("  size: 3\n  version: \"3.7.3\"\n"))
	gh := githubtest.New(t)
	gh.UseRepo(bare)
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	_ = os.WriteFile(liveFile, []byte(kvLive), 0o644)
	tokenFile := filepath.Join(t.TempDir(), "gh")
	_ = os.WriteFile(tokenFile, []byte(gh.Token), 0o600)
	r, cleanup, err := newReconciler(ctx, remoteOptions{repo: bare, base: "main"}, githubOptions{repo: "org/gitops", api: gh.URL + "/", tokenFile: tokenFile},
		liveSource{file: liveFile}, specsFlag{dir: "clusters"}, renderer.Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if out, err := r.pass(ctx); err != nil || outcomeOf(t, out, "EtcdCluster/kv").Status != plan.StatusConverged {
		t.Fatalf("the good spec: %+v %v", out, err)
	}
	for _, c := range []struct {
		name, spec string
		wantErr    string
		wantRefuse string
	}{
		{"a typo'd field", "  size: 3\n  verison: \"3.7.3\"\n", `clusters/kv.yaml:7:3: spec.verison: unknown field "verison" (did you mean "version"?)`, ""},
		{"an etcd size of 8", "  size: 8\n  version: \"3.7.3\"\n", "", "etcd size must be 1 to 7, got 8"},
		{"a storage shrink", "  size: 3\n  version: \"3.7.3\"\n  storage: 4Gi\n", "", "shrink"},
	} {
		t.Run(c.name, func(t *testing.T) {
			gitbed.Commit(t, bare, kvSpec(c.spec))
			out, err := r.pass(ctx)
			switch {
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("pass: %v, want %q", err, c.wantErr)
				}
			default:
				o := outcomeOf(t, out, "EtcdCluster/kv")
				if err != nil || o.Status != plan.StatusRefused || !strings.Contains(o.Note, c.wantRefuse) {
					t.Fatalf("pass: %+v %v, want a refusal saying %q", o, err, c.wantRefuse)
				}
			}
			if open := gh.Open(); len(open) != 0 {
				t.Fatalf("pull requests opened: %+v", open)
			}
			for ref := range refs(t, bare) {
				if strings.HasPrefix(ref, "refs/heads/cairn/") {
					t.Fatalf("a branch was pushed: %s", ref)
				}
			}
		})
	}
}

// Walkthrough 5 through a pull request: cairn check on a person's spec
// pull request sets the cairn/spec status and keeps one comment saying
// what is wrong and where; fixed, the status turns green and the comment
// says what cairn would plan.
func TestCheckReportsOnASpecPullRequest(t *testing.T) {
	bare := gitbed.New(t, kvSpec("  size: 3\n  version: \"3.7.3\"\n"))
	gh := githubtest.New(t)
	gh.UseRepo(bare)
	tokenFile := filepath.Join(t.TempDir(), "gh")
	_ = os.WriteFile(tokenFile, []byte(gh.Token), 0o600)
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	_ = os.WriteFile(liveFile, []byte(kvLive), 0o644)
	work, sha := personBranch(t, bare, "people/kv-size", kvSpec("  size: 8\n  version: \"3.7.3\"\n"))
	number := openPR(t, gh, "people/kv-size")
	args := func(sha string) []string {
		return []string{"check", "--repo", work, "--live", liveFile, "--github", "org/gitops", "--github-api", gh.URL + "/",
			"--github-token-file", tokenFile, "--pr", fmt.Sprint(number), "--sha", sha}
	}
	code, out, errOut := cairn(t, args(sha)...)
	if code != exitInvalid || !strings.Contains(out, "clusters/kv.yaml:6:9: spec.size") {
		t.Fatalf("bad spec: exit %d\n%s%s", code, out, errOut)
	}
	if st := gh.Statuses[sha]; st["state"] != "failure" || st["context"] != "cairn/spec" || !strings.Contains(st["description"], "invalid") {
		t.Fatalf("status %v", st)
	}
	pr := gh.PRs[number-1]
	if len(pr.Comments) != 1 || !strings.Contains(pr.Comments[0], "spec.size") {
		t.Fatalf("comments %q", pr.Comments)
	}

	_, sha = personBranch(t, bare, "people/kv-size", kvSpec("  size: 5\n  version: \"3.7.3\"\n"))
	fixed := filepath.Join(t.TempDir(), "fixed")
	if _, err := git.PlainClone(fixed, false, &git.CloneOptions{URL: bare, ReferenceName: plumbing.NewBranchReferenceName("people/kv-size")}); err != nil {
		t.Fatal(err)
	}
	args2 := args(sha)
	args2[2] = fixed
	code, out, errOut = cairn(t, args2...)
	if code != exitOK || !strings.Contains(out, "etcd-add-3") {
		t.Fatalf("fixed spec: exit %d\n%s%s", code, out, errOut)
	}
	if st := gh.Statuses[sha]; st["state"] != "success" {
		t.Fatalf("status %v", st)
	}
	if len(pr.Comments) != 1 || !strings.Contains(pr.Comments[0], "etcd-add-3") {
		t.Fatalf("the comment was not kept up to date: %q", pr.Comments)
	}
	if code, _, errOut := cairn(t, "check", "--repo", fixed, "--github", "org/gitops", "--pr", "1"); code != exitUsage || !strings.Contains(errOut, "--sha") {
		t.Fatalf("no sha: exit %d %s", code, errOut)
	}
}

// personBranch commits files on branch (made from main the first time),
// pushes it, and returns a checkout of it and its head.
func personBranch(t *testing.T, bare, branch string, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: bare, ReferenceName: plumbing.NewBranchReferenceName(branch)})
	if err != nil {
		if repo, err = git.PlainClone(dir, false, &git.CloneOptions{URL: bare, ReferenceName: "refs/heads/main"}); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range files {
		_ = os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit("change the spec", &git.CommitOptions{Author: &object.Signature{Name: "p", Email: "p@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if err := repo.Storer.SetReference(plumbing.NewHashReference(ref, h)); err != nil {
		t.Fatal(err)
	}
	spec := config.RefSpec("+" + ref + ":" + ref)
	if err := repo.Push(&git.PushOptions{RefSpecs: []config.RefSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	return dir, h.String()
}

// openPR opens a person's pull request through the GitHub API.
func openPR(t *testing.T, gh *githubtest.Server, branch string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"title": "Resize kv", "head": branch, "base": "main"})
	req, _ := http.NewRequest(http.MethodPost, gh.URL+"/repos/org/gitops/pulls", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+gh.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pr struct{ Number int }
	if err := json.NewDecoder(resp.Body).Decode(&pr); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("open pull request: %s %v", resp.Status, err)
	}
	return pr.Number
}
