package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

const autoMergePolicy = "apiVersion: cairn.dev/v1alpha1\nkind: Policy\nmetadata: {name: team}\nspec:\n  autoMerge: {kinds: [UpgradeMember, EtcdAddMember, PostgresAddReplica]}\n"

// oneMember is a one-member etcd at 3.5.20: its upgrade to 3.5.21 is
// disruptive (the only member restarts) and reversible.
const oneMember = "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: big\n  storage: 8Gi\n  network: restricted\n  tls: require\n  compaction: {mode: periodic, retention: 1h, applied: true}\n  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: 1, version: \"3.5.20\"}\n  members:\n  - {name: big-0, version: \"3.5.20\", ready: true, role: leader, tls: true, peerTLS: true}\n"

// The end-to-end case of issue 9: a step outside its maintenance window
// gets a pull request marked held, with a pending status and no merge;
// when the window opens the status turns green and cairn merges it,
// through branch protection that requires cairn/plan.
func TestAutoMergeOnGitHubWhenTheWindowOpens(t *testing.T) {
	windowed := strings.Replace(etcd8, "size: 8", "size: 1\n  maintenanceWindow: {schedule: \"0 22 * * *\", duration: 2h, timeZone: UTC}", 1)
	bare := gitbed.New(t, map[string]string{"clusters/big.yaml": windowed, "policies/merge.yaml": autoMergePolicy})
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	if err := os.WriteFile(liveFile, []byte(oneMember), 0o644); err != nil {
		t.Fatal(err)
	}
	gh := githubtest.New(t)
	gh.UseRepo(bare)
	gh.RequiredContexts = []string{publish.CheckContext}
	t.Setenv("GITHUB_TOKEN", gh.Token)
	propose := func(now string) string {
		t.Helper()
		code, out, errOut := cairn(t, "propose", "--repo", bare, "--live", liveFile, "--github", "o/r", "--github-api", gh.URL, "--now", now, "-v")
		if code != exitOK {
			t.Fatalf("propose at %s: exit %d\n%s\n%s", now, code, out, errOut)
		}
		t.Logf("at %s:\n%s%s", now, out, errOut[strings.Index(errOut, "GitHub API calls"):])
		return out
	}
	const merge = "PUT /repos/o/r/pulls/1/merge"

	out := propose("2026-11-30T12:00:00Z")
	open := gh.Open()
	if len(open) != 1 || gh.Statuses[open[0].Head.SHA]["state"] != "pending" || gh.Calls[merge] != 0 || !strings.Contains(out, "auto-merge: not while held by maintenance-window") {
		t.Fatalf("at noon: %+v %v %v\n%s", open, gh.Statuses, gh.Calls, out)
	}

	out = propose("2026-11-30T22:30:00Z")
	head := gh.PRs[0].Head.SHA
	if gh.Calls[merge] != 1 || !gh.PRs[0].Merged || gh.Statuses[head]["state"] != "success" || !strings.Contains(out, "auto-merged") {
		t.Fatalf("in the window: %+v %v %v\n%s", gh.PRs[0], gh.Statuses, gh.Calls, out)
	}
	if !strings.Contains(baseFile(t, bare, "rendered/big/kustomization.yaml"), "steps/upgrade-0-to-3.5.21") {
		t.Errorf("main does not select the merged step")
	}
	// The merged step waits for the live state: nothing more is merged.
	propose("2026-11-30T22:40:00Z")
	if gh.Calls[merge] != 1 || len(gh.PRs) != 1 {
		t.Errorf("after the merge: %v, %d pull requests", gh.Calls, len(gh.PRs))
	}
}

// Without GitHub, cairn merges into the repo itself: a fast-forward, then
// a merge commit for the next cluster's step; --no-auto-merge merges
// nothing.
func TestAutoMergeLocal(t *testing.T) {
	files := exampleFiles(t)
	files["policies/merge.yaml"] = autoMergePolicy
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	data, _ := os.ReadFile("../../examples/fleet/live.yaml")
	_ = os.WriteFile(liveFile, data, 0o644)

	off := gitbed.New(t, files)
	if code, out, errOut := cairn(t, "propose", "--repo", off, "--live", liveFile, "--no-auto-merge"); code != exitOK || strings.Contains(out, "auto-merged") || strings.Count(out, "opened") != 2 {
		t.Fatalf("--no-auto-merge: exit %d\n%s%s", code, out, errOut)
	}

	bare := gitbed.New(t, files)
	code, out, errOut := cairn(t, "propose", "--repo", bare, "--live", liveFile)
	if code != exitOK || strings.Count(out, "auto-merged") != 2 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, f := range []string{"rendered/my-etcd-cluster/kustomization.yaml", "rendered/my-production-db/kustomization.yaml", "clusters/my-etcd-cluster.yaml"} {
		if baseFile(t, bare, f) == "" {
			t.Errorf("main lacks %s after the merges", f)
		}
	}
	_, list, _ := cairn(t, "pr", "list", "--repo", bare)
	if strings.Count(list, "merged") != 2 {
		t.Fatalf("pr list:\n%s", list)
	}
	code, out, _ = cairn(t, "plan", "--repo", "../../examples/fleet", "--live", liveFile)
	if code != exitOK || strings.Contains(out, "auto-merge") {
		t.Errorf("the example has no auto-merge policy:\n%s", out)
	}
}

// The reconcile loop merges a step, holds the cluster until the live state
// shows it done, then opens and merges the next.
func TestReconcileAutoMergesStepByStep(t *testing.T) {
	ctx := context.Background()
	files := exampleFiles(t)
	files["policies/merge.yaml"] = autoMergePolicy
	bare := gitbed.New(t, files)
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	base, _ := os.ReadFile("../../examples/fleet/live.yaml")
	setLive := func(s string) { _ = os.WriteFile(liveFile, []byte(s), 0o644) }
	setLive(string(base))
	r, cleanup, err := newReconciler(ctx, remoteOptions{repo: bare, base: "main"}, githubOptions{}, liveSource{file: liveFile}, specsFlag{dir: "clusters"}, renderer.Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	etcdOf := func() publish.Outcome {
		out, err := r.pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return outcomeOf(t, out, "EtcdCluster/my-etcd-cluster")
	}
	if o := etcdOf(); o.Action != publish.ActionAutoMerged || o.Step != "etcd-add-1" {
		t.Fatalf("first pass: %+v", o)
	}
	if o := etcdOf(); o.Action != publish.ActionHeld || !strings.Contains(o.Note, "waiting for merged step etcd-add-1") {
		t.Fatalf("after the merge: %+v", o)
	}
	joined := mustReplace(t, string(base), "statefulSet: {readOnlyRootFilesystem: true, replicas: 1,", "statefulSet: {readOnlyRootFilesystem: true, replicas: 2,")
	joined = mustReplace(t, joined, "role: leader, tls: true, peerTLS: true}\n", "role: leader, tls: true, peerTLS: true}\n      - {name: my-etcd-cluster-1, version: \"3.2.13\", ready: true, role: follower, tls: true, peerTLS: true}\n")
	setLive(joined)
	if o := etcdOf(); o.Action != publish.ActionAutoMerged || o.Step != "etcd-add-2" {
		t.Fatalf("after the step showed done: %+v", o)
	}
	if !strings.Contains(baseFile(t, bare, "rendered/my-etcd-cluster/kustomization.yaml"), "steps/etcd-add-2") {
		t.Errorf("main does not select etcd-add-2")
	}
}

func TestPlanAndPolicyTestShowAutoMerge(t *testing.T) {
	repo := writeRepo(t, map[string]string{"clusters/big.yaml": strings.Replace(etcd8, "size: 8", "size: 1", 1),
		"policies/merge.yaml": autoMergePolicy, "live.yaml": oneMember})
	code, out, errOut := cairn(t, "plan", "--repo", repo, "--live", repo+"/live.yaml")
	if code != exitOK || !strings.Contains(out, "disruptive,auto-merge") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cairn(t, "policy", "test", "--repo", repo, "--live", repo+"/live.yaml")
	if code != exitOK || !strings.Contains(out, "team/auto-merge  Allow (auto-merge)") {
		t.Fatalf("policy test: exit %d\n%s%s", code, out, errOut)
	}
	bad := writeRepo(t, map[string]string{"clusters/big.yaml": etcd8,
		"policies/merge.yaml": strings.Replace(autoMergePolicy, "UpgradeMember", "ExpandStorage", 1)})
	code, _, errOut = cairn(t, "plan", "--repo", bad)
	if code != exitInvalid || !strings.Contains(errOut, "merge.yaml:5:23: spec.autoMerge.kinds[0]: ExpandStorage steps are irreversible") {
		t.Fatalf("an irreversible kind: exit %d %s", code, errOut)
	}
}

// baseFile reads a file on main of the bare repo; "" when it is not there.
func baseFile(t *testing.T, bare, path string) string {
	t.Helper()
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.File(path)
	if err != nil {
		return ""
	}
	s, _ := f.Contents()
	return s
}
