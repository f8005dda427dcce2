package fleet

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// The same n and seed give the same repo and live state; another seed
// another fleet with the same shares.
func TestSameSeedSameFleet(t *testing.T) {
	a, b, c := New(20, 1), New(20, 1), New(20, 2)
	if !maps.Equal(a.Files(), b.Files()) || !bytes.Equal(a.Live(), b.Live()) {
		t.Fatal("two fleets of the same seed differ")
	}
	if maps.Equal(a.Files(), c.Files()) && bytes.Equal(a.Live(), c.Live()) {
		t.Error("seeds 1 and 2 give the same fleet")
	}
	if a.Planned() != c.Planned() {
		t.Errorf("planned: %d with seed 1, %d with seed 2", a.Planned(), c.Planned())
	}
}

// stepKind is the kind of the first step each change of each kind
// plans.
var stepKind = map[Kind]map[Change]plan.Kind{
	Etcd:     {ScaleOut: plan.EtcdAddMember, MinorUpgrade: plan.UpgradeMember, StorageGrowth: plan.ExpandStorage, Create: plan.CreateCluster},
	Postgres: {ScaleOut: plan.PostgresAddReplica, MinorUpgrade: plan.UpgradeMember, StorageGrowth: plan.ExpandStorage, Create: plan.CreateCluster},
}

// plans plans the fleet as cairn does: its repo's specs against its live
// state.
func plans(t *testing.T, f *Fleet) map[string]plan.Plan {
	t.Helper()
	dir := t.TempDir()
	for p, c := range f.Files() {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clusters, err := spec.LoadRepo(dir, spec.DefaultLayout)
	if err != nil {
		t.Fatal(err)
	}
	observed, err := live.Decode("live.yaml", f.Live())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]plan.Plan{}
	for _, p := range planner.New(planner.Etcd(), planner.Postgres()).Plan(clusters, observed, nil).Plans {
		out[p.Cluster.Name] = p
	}
	return out
}

// A fleet of 20 plans as dealt: half etcd, half PostgreSQL, 8 converged
// and 12 with a step to take, each change's first step of its kind.
func TestFleetPlansAsDealt(t *testing.T) {
	f := New(20, 1)
	if f.Planned() != 12 || f.Count(Converged) != 8 {
		t.Fatalf("dealt %d planned and %d converged, want 12 and 8", f.Planned(), f.Count(Converged))
	}
	kinds := map[Kind]int{}
	got := plans(t, f)
	planned := 0
	for _, c := range f.Clusters {
		kinds[c.Kind]++
		p, ok := got[c.Name]
		switch {
		case !ok:
			t.Errorf("%s: no plan", c)
		case c.Change == Converged:
			if p.Status != plan.StatusConverged {
				t.Errorf("%s, converged: %s %v", c, p.Status, p.Steps)
			}
		case p.Status != plan.StatusPlanned || len(p.Steps) == 0:
			t.Errorf("%s, %s: %s %v %v", c, c.Change, p.Status, p.Refusals, p.Waiting)
		case p.Steps[0].Kind != stepKind[c.Kind][c.Change]:
			t.Errorf("%s, %s: first step %s (%s), want a %s", c, c.Change, p.Steps[0].ID, p.Steps[0].Kind, stepKind[c.Kind][c.Change])
		default:
			planned++
		}
	}
	if planned != f.Planned() || kinds[Etcd] != 10 || kinds[Postgres] != 10 {
		t.Errorf("%d planned as dealt of %d; kinds %v", planned, f.Planned(), kinds)
	}
	for _, ch := range Changes {
		if f.Count(ch) != 3 {
			t.Errorf("%d clusters of %s, want 3", f.Count(ch), ch)
		}
	}
}

// Advance plays each step out as the planner expects: a cluster with a
// plan of k steps converges after k calls, one step fewer each time.
func TestAdvanceWalksEachPlanToItsEnd(t *testing.T) {
	f := New(20, 3)
	first := plans(t, f)
	for _, c := range f.Clusters {
		if c.Change == Converged {
			if err := f.Advance(c.Name); err == nil {
				t.Errorf("%s: advanced a converged cluster", c)
			}
			continue
		}
		want := len(first[c.Name].Steps)
		for i := range want {
			if err := f.Advance(c.Name); err != nil {
				t.Fatalf("%s: step %d: %v", c, i+1, err)
			}
			p := plans(t, f)[c.Name]
			if left := want - i - 1; len(p.Steps) != left || (left == 0) != (p.Status == plan.StatusConverged) {
				t.Fatalf("%s (%s), after step %d of %v: %s %d steps %v, waiting %v", c, c.Change, i+1, stepIDs(first[c.Name]), p.Status, len(p.Steps), stepIDs(p), p.Waiting)
			}
		}
	}
}

func stepIDs(p plan.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.ID)
	}
	return out
}

// WriteBare's main holds exactly the fleet's files; Merge makes a merge
// commit of a branch cut from it.
func TestWriteBareThenMerge(t *testing.T) {
	f := New(20, 1)
	bare := filepath.Join(t.TempDir(), "gitops.git")
	base, err := WriteBare(bare, f.Files())
	if err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	if got := files(t, repo, base); !maps.Equal(got, f.Files()) {
		t.Fatalf("main holds %d files, want the fleet's %d", len(got), len(f.Files()))
	}
	if again, _ := WriteBare(filepath.Join(t.TempDir(), "again.git"), f.Files()); again != base {
		t.Errorf("the same files gave commits %s and %s", base, again)
	}

	// A step's branch: the base and one file more.
	step := maps.Clone(f.Files())
	step["rendered/etcd-00000/kustomization.yaml"] = "resources: []\n"
	root := &dir{}
	for p, c := range step {
		root.add(strings.Split(p, "/"), c)
	}
	tree, err := root.write(repo.Storer)
	if err != nil {
		t.Fatal(err)
	}
	sig := person(written)
	tip, err := encode(repo.Storer, &object.Commit{Author: sig, Committer: sig, Message: "step\n", TreeHash: tree, ParentHashes: []plumbing.Hash{base}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/cairn/etcd-00000/create", tip)); err != nil {
		t.Fatal(err)
	}
	merged, err := Merge(bare, "cairn/etcd-00000/create")
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(merged)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ParentHashes) != 2 || c.ParentHashes[0] != base || c.ParentHashes[1] != tip || !maps.Equal(files(t, repo, merged), step) {
		t.Errorf("merge commit %s: parents %v, want [%s %s], and the branch's files", merged, c.ParentHashes, base, tip)
	}
	if _, err := Merge(bare, "cairn/etcd-00000/create"); err != nil {
		t.Errorf("merging a branch main already holds: %v", err)
	}
}

func files(t *testing.T, repo *git.Repository, h plumbing.Hash) map[string]string {
	t.Helper()
	c, err := repo.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	iter, err := c.Files()
	if err != nil {
		t.Fatal(err)
	}
	_ = iter.ForEach(func(f *object.File) error {
		out[f.Name], err = f.Contents()
		return err
	})
	return out
}
