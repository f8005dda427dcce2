package publish

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// world is a GitOps repo (a bare remote) with the local provider, one
// clone of it kept across passes as the reconcile loop keeps it, and the
// live state the planner sees. A pass plans and publishes as cairn
// propose does; people commit, merge and push on the bare repo.
type world struct {
	t     *testing.T
	bare  string
	repo  *gitrepo.Repo
	prs   Provider
	rend  *renderer.Renderer
	live  string
	pols  policies.Set
	gates func(plan.Plan) (bool, string)
	// opened counts the pull requests opened, by branch.
	opened map[string]int
}

const cairnEmail = "cairn@users.noreply.cairn.dev"

func newWorld(t *testing.T, files map[string]string) *world {
	t.Helper()
	bare := gitbed.New(t, files)
	repo, err := gitrepo.Clone(context.Background(), gitrepo.Remote{URL: bare}, filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	rend, err := renderer.New(renderer.Options{}, renderer.Etcd(), renderer.Postgres())
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, bare: bare, repo: repo, rend: rend, prs: &Local{Repo: repo, Base: "main"}, live: testbed.NoLive, opened: map[string]int{}}
}

// state is what a pass starts from: the base as it is now, its specs,
// and the live state.
func (w *world) state(ctx context.Context) (*object.Commit, []spec.Cluster, *live.Snapshot) {
	w.t.Helper()
	if err := w.repo.Fetch(ctx); err != nil {
		w.t.Fatal(err)
	}
	if err := w.repo.CheckoutBase(); err != nil {
		w.t.Fatal(err)
	}
	base, err := w.repo.Base()
	if err != nil {
		w.t.Fatal(err)
	}
	clusters, err := spec.LoadRepo(w.repo.Dir(), spec.DefaultLayout)
	if err != nil {
		w.t.Fatal(err)
	}
	obs, err := live.Decode("live.yaml", []byte(w.live))
	if err != nil {
		w.t.Fatal(err)
	}
	return base, clusters, obs
}

// pass is one pass of cairn over the base as it is now.
func (w *world) pass() ([]Outcome, error) {
	w.t.Helper()
	ctx := context.Background()
	base, clusters, obs := w.state(ctx)
	pub := &Publisher{Repo: w.repo, PRs: w.prs, Render: w.rend.Render, Name: "cairn", Email: cairnEmail, MergeGates: w.gates, Wording: kindWording}
	out, err := pub.Publish(ctx, base, clusters, planner.New(planner.Etcd(), planner.Postgres()).Plan(clusters, obs, w.pols))
	for _, o := range out {
		if o.Action == ActionOpened {
			w.opened[o.Branch]++
		}
	}
	return out, err
}

// one is the outcome for cluster e of a pass that must not fail; the zero
// Outcome when nothing was planned for it.
func (w *world) one() Outcome {
	w.t.Helper()
	out, err := w.pass()
	if err != nil {
		w.t.Fatalf("pass: %v (%+v)", err, out)
	}
	for _, o := range out {
		if o.Cluster == "EtcdCluster/e" {
			return o
		}
	}
	return Outcome{}
}

// walk drives cluster e through steps as people do: each step's pull
// request must open in one pass at lives[i]; a person merges it; the next
// pass, the live state not caught up yet, must wait for it and open
// nothing. The cluster must then be converged at the last live state.
func (w *world) walk(steps []string, lives []string, merge func(branch string)) {
	w.t.Helper()
	for i, step := range steps {
		w.live = lives[i]
		o := w.one()
		if o.Action != ActionOpened || o.Step != step {
			w.t.Fatalf("step %d: %+v, want %s opened", i, o, step)
		}
		merge(o.Branch)
		if o = w.one(); o.Action != ActionMerged || o.Step != step {
			w.t.Fatalf("after merging %s: %+v, want it merged and waiting", step, o)
		}
	}
	w.live = lives[len(steps)]
	if o := w.one(); o.Status != plan.StatusConverged {
		w.t.Fatalf("after %v: %+v, want converged", steps, o)
	}
}

// merge merges a step's branch into main as a person does with git: a
// fast-forward, or a merge commit keeping what main has since.
func (w *world) merge(branch string) {
	w.t.Helper()
	repo, err := git.PlainOpen(w.bare)
	if err != nil {
		w.t.Fatal(err)
	}
	head, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		w.t.Fatal(err)
	}
	main, _ := repo.Reference("refs/heads/main", true)
	hc, _ := repo.CommitObject(head.Hash())
	mc, _ := repo.CommitObject(main.Hash())
	sig := object.Signature{Name: "person", Email: "p@example.com", When: time.Now()}
	cluster := strings.Split(branch, "/")[1]
	h, err := gitrepo.MergeCommit(repo, mc, hc, renderer.Root(cluster), "merge "+branch+"\n", sig, false, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", h)); err != nil {
		w.t.Fatal(err)
	}
}
