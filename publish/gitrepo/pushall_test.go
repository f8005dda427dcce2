package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func changeOf(cluster, content string) Build {
	return func(*object.Commit) (Change, error) {
		root := "rendered/" + cluster
		return Change{Root: root, Files: map[string][]byte{
			root + "/kustomization.yaml": []byte(content),
			root + "/steps/s/patch.yaml": []byte("patch of " + cluster + "\n"),
		}, Message: "cairn: " + cluster + ": step\n\nCairn-Step: s\n", Name: "cairn", Email: "cairn@example.com"}, nil
	}
}

// One push carries every branch of a pass: new branches, an update of
// cairn's own, and one a person moved meanwhile, whose lease fails. The
// others land with the commits they were staged with, and the moved one
// is proven again: a person's commit there is left alone.
func TestPushAllPushesEveryBranchUnderItsOwnLease(t *testing.T) {
	ctx := context.Background()
	bare := newRemote(t, map[string]string{"clusters/a.yaml": "spec\n"})
	r := clone(t, bare)
	if _, err := r.Publish(ctx, "cairn/b/s", changeOf("b", "b v1\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Publish(ctx, "cairn/c/s", changeOf("c", "c v1\n")); err != nil {
		t.Fatal(err)
	}
	if err := r.FetchBranches(ctx, "cairn/"); err != nil {
		t.Fatal(err)
	}
	var staged []*Staged
	for _, c := range []struct{ cluster, content string }{{"a", "a v1\n"}, {"b", "b v2\n"}, {"c", "c v2\n"}, {"d", "d v1\n"}, {"e", "e v1\n"}} {
		s, err := r.Stage(ctx, "cairn/"+c.cluster+"/s", changeOf(c.cluster, c.content))
		if err != nil {
			t.Fatal(err)
		}
		staged = append(staged, s)
	}
	// A person pushes to c after cairn fetched it, and makes e, which did
	// not exist then (its commit is one the clone lacks).
	person := commitTo(t, bare, "cairn/c/s", map[string]string{"rendered/c/kustomization.yaml": "by hand\n"}, "a fix")
	commitTo(t, bare, "cairn/e/s", map[string]string{"rendered/e/kustomization.yaml": "by hand\n"}, "made by a person")
	results, errs := r.PushAll(ctx, staged)
	for i, want := range []string{"a v1\n", "b v2\n", "", "d v1\n", ""} {
		branch := fmt.Sprintf("cairn/%c/s", 'a'+i)
		if want == "" {
			if !errors.Is(errs[i], ErrForeignCommit) {
				t.Errorf("%s: err %v, want the person's commit found", branch, errs[i])
			}
			if got := readBranch(t, bare, branch); got["rendered/"+branch[6:7]+"/kustomization.yaml"] != "by hand\n" {
				t.Errorf("%s: the person's commit %s was pushed over: %v", branch, person, got)
			}
			continue
		}
		if errs[i] != nil || !results[i].Pushed {
			t.Errorf("%s: %+v %v", branch, results[i], errs[i])
			continue
		}
		got := readBranch(t, bare, branch)
		if got["rendered/"+branch[6:7]+"/kustomization.yaml"] != want || got["clusters/a.yaml"] != "spec\n" {
			t.Errorf("%s holds %v", branch, got)
		}
		if head := headOf(t, bare, branch); head != results[i].Commit {
			t.Errorf("%s: head %s, result %s", branch, head, results[i].Commit)
		}
	}
	// A branch absent when fetched that a person makes before the push is
	// the only one at fault: the others land.
	if err := r.FetchBranches(ctx, "cairn/"); err != nil {
		t.Fatal(err)
	}
	f, err := r.Stage(ctx, "cairn/f/s", changeOf("f", "f v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.Stage(ctx, "cairn/g/s", changeOf("g", "g v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	commitTo(t, bare, "cairn/f/s", map[string]string{"rendered/f/kustomization.yaml": "by hand\n"}, "made by a person")
	if _, errs := r.PushAll(ctx, []*Staged{f, g}); !errors.Is(errs[0], ErrForeignCommit) || errs[1] != nil {
		t.Errorf("f, g: %v", errs)
	}
	if got := readBranch(t, bare, "cairn/g/s"); got["rendered/g/kustomization.yaml"] != "g v1\n" {
		t.Errorf("g holds %v", got)
	}
	// Staged again, nothing moved: nothing to push.
	if err := r.FetchBranches(ctx, "cairn/"); err != nil {
		t.Fatal(err)
	}
	s, err := r.Stage(ctx, "cairn/a/s", changeOf("a", "a v1\n"))
	if err != nil || s.Result().Pushed {
		t.Fatalf("a again: %+v %v", s, err)
	}
	if res, errs := r.PushAll(ctx, []*Staged{s}); errs[0] != nil || res[0].Pushed || res[0].Commit != results[0].Commit {
		t.Errorf("a again: %+v %v", res[0], errs[0])
	}
}

func headOf(t *testing.T, bare, branch string) plumbing.Hash {
	t.Helper()
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash()
}

// The commit cairn makes in the object store is the very commit git makes
// of the same files through a working directory and its index (so
// branches pushed before keep proving exact), for nested folders, names
// that sort around "/", and files elsewhere in the repo left as they are.
func TestCommitsInTheStoreAreGitsOwn(t *testing.T) {
	files := map[string][]byte{
		"rendered/db/kustomization.yaml":     []byte("resources: [steps/a]\n"),
		"rendered/db/steps/a/x.yaml":         []byte("x\n"),
		"rendered/db/steps/a-b/y.yaml":       []byte("y\n"),
		"rendered/db/steps/a.b":              []byte("a file beside the folders\n"),
		"rendered/db/steps/a/nested/z.yaml":  []byte("z\n"),
		"rendered/db/PLAN.md":                []byte("plan\n"),
		"rendered/db/monitoring/pm.yaml":     []byte("pm\n"),
		"rendered/db/monitoring-other/q.txt": []byte(""),
	}
	bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n", "rendered/db/old.yaml": "old\n", "rendered/dz/k.yaml": "k\n", "rendered/d/k.yaml": "k\n"})
	r := clone(t, bare)
	base, err := r.Base()
	if err != nil {
		t.Fatal(err)
	}
	change := Change{Root: "rendered/db", Files: files, Message: "m\n", Name: "cairn", Email: "c@example.com"}
	got, err := r.commit(base, change)
	if err != nil {
		t.Fatal(err)
	}
	// git's way: check the base out, replace the folder, add all, commit.
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: bare, ReferenceName: "refs/heads/main", SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "rendered/db")); err != nil {
		t.Fatal(err)
	}
	for p, data := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "cairn", Email: "c@example.com", When: base.Committer.When}
	want, err := wt.Commit("m\n", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != want {
		t.Errorf("commit %s, git's %s", got.Hash, want)
	}
}

// Paths a checkout would read otherwise are refused before anything is
// written.
func TestCommitRefusesPathsGitWouldNotKeep(t *testing.T) {
	bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n"})
	r := clone(t, bare)
	base, err := r.Base()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"rendered/db/../x", "rendered/db//x", "rendered/db/./x", "rendered/db/.git/config", "rendered/db/.GIT/x", "rendered/db/a\\b", "rendered/db/"} {
		_, err := r.commit(base, Change{Root: "rendered/db", Files: map[string][]byte{p: []byte("x")}, Message: "m", Name: "c", Email: "c@x"})
		if err == nil {
			t.Errorf("%q: committed", p)
		}
	}
	for _, root := range []string{"rendered/../x", "", "rendered//db", "/rendered/db"} {
		_, err := r.commit(base, Change{Root: root, Files: map[string][]byte{root + "/k": []byte("x")}, Message: "m", Name: "c", Email: "c@x"})
		if err == nil {
			t.Errorf("root %q: committed", root)
		}
	}
}
