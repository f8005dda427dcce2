package githubpr

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
)

const etcdSpec = `apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: e}
spec: {size: 5, version: "3.5.21"}
`

const etcdLive = `apiVersion: cairn.dev/v1alpha1
kind: LiveState
clusters:
- kind: EtcdCluster
  name: e
  storage: 8Gi
  network: restricted
  tls: require
  compaction: {mode: periodic, retention: 1h, applied: true}
  runtime: {readOnlyRootFilesystem: true}
  statefulSet: {readOnlyRootFilesystem: true, replicas: 3, version: "3.5.21"}
  members:
  - {name: e-0, version: "3.5.21", ready: true, role: leader, tls: true, peerTLS: true}
  - {name: e-1, version: "3.5.21", ready: true, role: follower, tls: true, peerTLS: true}
  - {name: e-2, version: "3.5.21", ready: true, role: follower, tls: true, peerTLS: true}
`

// bareRepo is a GitOps repo with one etcd spec on main.
func bareRepo(t *testing.T) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "gitops.git")
	if _, err := git.PlainInitWithOptions(bare, &git.PlainInitOptions{Bare: true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	repo, _ := git.PlainInit(dir, false)
	_, _ = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{bare}})
	_ = os.MkdirAll(filepath.Join(dir, "clusters"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "clusters", "e.yaml"), []byte(etcdSpec), 0o644)
	wt, _ := repo.Worktree()
	_, _ = wt.Add("clusters/e.yaml")
	h, err := wt.Commit("spec", &git.CommitOptions{Author: &object.Signature{Name: "p", Email: "p@x", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	_ = repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", h))
	if err := repo.Push(&git.PushOptions{RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
		t.Fatal(err)
	}
	return bare
}

// publishOnce is one run of cairn propose with the GitHub provider.
func publishOnce(t *testing.T, bare string, p *Provider) ([]publish.Outcome, error) {
	t.Helper()
	return publishWith(t, bare, p, etcdLive, nil)
}

// publishWith is one run with a given live state and policies.
func publishWith(t *testing.T, bare string, p *Provider, liveDoc string, pols policies.Set) ([]publish.Outcome, error) {
	t.Helper()
	return publishMerging(t, bare, p, liveDoc, pols, nil)
}

// publishMerging is one run with auto-merge on when gates is set.
func publishMerging(t *testing.T, bare string, p *Provider, liveDoc string, pols policies.Set, gates func(plan.Plan) (bool, string)) ([]publish.Outcome, error) {
	t.Helper()
	return publishVia(t, bare, p, liveDoc, pols, gates)
}

// publishVia is one run through any provider.
func publishVia(t *testing.T, bare string, prs publish.Provider, liveDoc string, pols policies.Set, gates func(plan.Plan) (bool, string)) ([]publish.Outcome, error) {
	t.Helper()
	return publishSetUp(t, bare, prs, liveDoc, pols, func(pub *publish.Publisher, _ *live.Snapshot) { pub.MergeGates = gates })
}

// publishSetUp is one run through any provider, its Publisher set up by
// set with the live state the run plans against.
func publishSetUp(t *testing.T, bare string, prs publish.Provider, liveDoc string, pols policies.Set, set func(*publish.Publisher, *live.Snapshot)) ([]publish.Outcome, error) {
	t.Helper()
	ctx := context.Background()
	repo, err := gitrepo.Clone(ctx, gitrepo.Remote{URL: bare}, filepath.Join(t.TempDir(), "w"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := renderer.New(renderer.Options{}, renderer.Etcd(), renderer.Postgres())
	base, _ := repo.Base()
	clusters, err := spec.LoadRepo(repo.Dir(), spec.DefaultLayout)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := live.Decode("live.yaml", []byte(liveDoc))
	if err != nil {
		t.Fatal(err)
	}
	pub := &publish.Publisher{Repo: repo, PRs: prs, Render: r.Render, Name: "cairn", Email: "c@x"}
	set(pub, obs)
	return pub.Publish(ctx, base, clusters, planner.New(planner.Etcd(), planner.Postgres()).Plan(clusters, obs, pols))
}

func TestPublisherOnGitHub(t *testing.T) {
	f := githubtest.New(t)
	bare := bareRepo(t)
	f.UseRepo(bare)

	p1, _ := newProvider(t, f.URL, f.Token)
	out, err := publishOnce(t, bare, p1)
	if err != nil || out[0].Action != publish.ActionOpened {
		t.Fatalf("%+v %v", out, err)
	}
	open := f.Open()
	if len(open) != 1 || open[0].Head.Ref != "cairn/e/etcd-add-3" || len(open[0].Labels) != 2 || len(open[0].Body) > publish.MaxBody {
		t.Fatalf("pull request: %+v", open)
	}
	if st := f.Statuses[open[0].Head.SHA]; st["state"] != "success" || st["context"] != publish.CheckContext {
		t.Errorf("commit status on the head: %v", st)
	}
	t.Logf("REST calls to open one step's pull request: %+v", p1.Counts())

	// A no-op run makes no write calls.
	p2, _ := newProvider(t, f.URL, f.Token)
	out, err = publishOnce(t, bare, p2)
	if err != nil || out[0].Action != publish.ActionUnchanged || p2.Counts().Writes != 0 {
		t.Fatalf("no-op run: %+v %v, calls %+v", out, err, p2.Counts())
	}
	t.Logf("REST calls to re-check an unchanged plan: %+v", p2.Counts())
	// In the reconcile loop the provider lives on: a re-check is one
	// conditional read, answered 304 Not Modified.
	before := p2.Counts()
	if _, err := publishOnce(t, bare, p2); err != nil {
		t.Fatal(err)
	}
	if c := p2.Counts(); c.Reads-before.Reads != 1 || c.NotModified-before.NotModified != 1 || c.Writes != 0 {
		t.Fatalf("loop re-check: %+v after %+v", c, before)
	}
}

func TestPublisherRecoversFromACrashBetweenCalls(t *testing.T) {
	for _, at := range []string{"POST /repos/o/r/pulls", "PUT /repos/o/r/issues/"} {
		t.Run(at, func(t *testing.T) {
			f := githubtest.New(t)
			bare := bareRepo(t)
			f.UseRepo(bare)
			f.FailAt = at // the run dies after the push, before (or after) the PR
			p, _ := newProvider(t, f.URL, f.Token)
			if _, err := publishOnce(t, bare, p); err == nil {
				t.Fatal("the injected failure did not fail the run")
			}
			p, _ = newProvider(t, f.URL, f.Token)
			if _, err := publishOnce(t, bare, p); err != nil {
				t.Fatal(err)
			}
			open := f.Open()
			if len(open) != 1 || len(open[0].Labels) != 2 {
				t.Fatalf("after recovery: %+v", open)
			}
		})
	}
}

func TestTwoPublishersAtOnceOpenOnePullRequest(t *testing.T) {
	f := githubtest.New(t)
	bare := bareRepo(t)
	f.UseRepo(bare)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, _ := newProvider(t, f.URL, f.Token)
			_, errs[i] = publishOnce(t, bare, p)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, gitrepo.ErrRejected) {
			t.Fatal(err)
		}
	}
	if open := f.Open(); len(open) != 1 {
		t.Fatalf("%d pull requests open for one step", len(open))
	}
}

func TestAForksPullRequestIsNotCairns(t *testing.T) {
	f := githubtest.New(t)
	bare := bareRepo(t)
	f.UseRepo(bare)
	// Someone opens a pull request from a fork with cairn's branch name.
	f.PRs = append(f.PRs, &githubtest.PR{Number: 1, State: "open", Title: "not cairn", Body: "x",
		Head: githubtest.Ref{Ref: "cairn/e/etcd-add-3", SHA: "f0f0", Repo: githubtest.RepoName{FullName: "mallory/r"}}, Base: githubtest.Ref{Ref: "main"}})
	p, _ := newProvider(t, f.URL, f.Token)
	out, err := publishOnce(t, bare, p)
	if err != nil || out[0].Action != publish.ActionOpened {
		t.Fatalf("%+v %v", out, err)
	}
	if f.PRs[0].Title != "not cairn" || len(f.PRs) != 2 || f.PRs[1].Head.Repo.FullName != "o/r" {
		t.Fatalf("the fork's pull request was taken over: %+v", f.PRs)
	}
}

// A step outside its maintenance window gets a pull request with a
// pending status; when the window opens, the status turns green.
func TestHeldStepTurnsGreenWhenItsWindowOpens(t *testing.T) {
	f := githubtest.New(t)
	bare := bareRepo(t)
	f.UseRepo(bare)
	// A one-member etcd upgrade is disruptive; the spec sets a window.
	setSpec(t, bare, "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec:\n  size: 1\n  version: \"3.5.21\"\n  maintenanceWindow: {schedule: \"0 22 * * *\", duration: 2h, timeZone: UTC}\n")
	one := "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: e\n  storage: 8Gi\n  network: restricted\n  tls: require\n  compaction: {mode: periodic, retention: 1h, applied: true}\n  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: 1, version: \"3.5.20\"}\n  members:\n  - {name: e-0, version: \"3.5.20\", ready: true, role: leader, tls: true, peerTLS: true}\n"
	noon := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p, _ := newProvider(t, f.URL, f.Token)
	if _, err := publishWith(t, bare, p, one, policies.Set{policies.SpecWindow{Now: noon}}); err != nil {
		t.Fatal(err)
	}
	open := f.Open()
	if len(open) != 1 || f.Statuses[open[0].Head.SHA]["state"] != "pending" || !strings.Contains(f.Statuses[open[0].Head.SHA]["description"], "opens at 2026-11-30 22:00 UTC") {
		t.Fatalf("at noon: %+v %v", open, f.Statuses)
	}
	if _, err := publishWith(t, bare, p, one, policies.Set{policies.SpecWindow{Now: noon.Add(10*time.Hour + 30*time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	open = f.Open()
	head := f.HeadSHA(open[0].Head.Ref)
	if len(open) != 1 || f.Statuses[head]["state"] != "success" {
		t.Fatalf("in the window: %+v %v", open, f.Statuses)
	}
}

// setSpec replaces the bare repo's spec on main.
func setSpec(t *testing.T, bare, doc string) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: bare, ReferenceName: "refs/heads/main", SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clusters", "e.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	_, _ = wt.Add("clusters/e.yaml")
	if _, err := wt.Commit("window", &git.CommitOptions{Author: &object.Signature{Name: "p", Email: "p@x", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// readMain returns the files on main of the bare repo.
func readMain(t *testing.T, bare string) map[string]string {
	t.Helper()
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference("refs/heads/main", true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	iter, _ := c.Files()
	_ = iter.ForEach(func(f *object.File) error {
		files[f.Name], _ = f.Contents()
		return nil
	})
	return files
}
