package gitrepo

import (
	"context"
	"maps"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// refsOf are a repository's refs by name, as its storage lists them.
func refsOf(t *testing.T, repo *git.Repository) map[string]string {
	t.Helper()
	it, err := repo.References()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	_ = it.ForEach(func(r *plumbing.Reference) error {
		out[r.Name().String()] = r.String()
		return nil
	})
	return out
}

// The refs the clone holds in memory are what its files say after every
// kind of write cairn makes: branches pushed alone and together, records,
// fetches with branches pruned, and a branch removed.
func TestRefCacheIsWhatTheFilesSay(t *testing.T) {
	ctx := context.Background()
	bare := newRemote(t, map[string]string{"clusters/a.yaml": "spec\n"})
	r := clone(t, bare)
	check := func(when string) {
		t.Helper()
		files, err := git.PlainOpen(r.Dir())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := refsOf(t, r.repo), refsOf(t, files); !maps.Equal(got, want) {
			t.Errorf("%s: the refs in memory %v, the files %v", when, got, want)
		}
	}
	check("after the clone")
	if _, err := r.Publish(ctx, "cairn/a/s", changeOf("a", "a\n")); err != nil {
		t.Fatal(err)
	}
	check("after a push")
	if err := r.FetchBranches(ctx, "cairn/"); err != nil {
		t.Fatal(err)
	}
	var staged []*Staged
	for _, c := range []string{"b", "c"} {
		s, err := r.Stage(ctx, "cairn/"+c+"/s", changeOf(c, c+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		staged = append(staged, s)
	}
	if _, errs := r.PushAll(ctx, staged); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	check("after one push of two branches")
	if errs := r.WriteRecords(ctx, []RecordWrite{{Ref: RecordPrefix + "pr/x", Data: []byte("x")}, {Ref: RecordPrefix + "pr/y", Data: []byte("y")}}); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	check("after records")
	// A person deletes a branch on the remote: the fetch prunes it.
	remote, _ := git.PlainOpen(bare)
	if err := remote.Storer.RemoveReference(plumbing.NewBranchReferenceName("cairn/b/s")); err != nil {
		t.Fatal(err)
	}
	if err := r.FetchBranches(ctx, "cairn/"); err != nil {
		t.Fatal(err)
	}
	check("after a fetch that pruned a branch")
	if b, _ := r.RemoteBranch("cairn/b/s"); b != nil {
		t.Error("the pruned branch is still seen")
	}
	// Reads of a commit's files through the kept trees are go-git's.
	head, err := r.RemoteBranch("cairn/c/s")
	if err != nil || head == nil {
		t.Fatal(err)
	}
	for _, p := range []string{"rendered/c/kustomization.yaml", "rendered/c/steps/s/patch.yaml", "clusters/a.yaml", "rendered/c/steps", "rendered/nope", "rendered/c/kustomization.yaml/x"} {
		want, werr := "", error(nil)
		if f, err := head.File(p); err == nil {
			want, werr = f.Contents()
		} else {
			werr = err
		}
		got, gerr := r.Reader(head)(p)
		if (gerr == nil) != (werr == nil) || string(got) != want {
			t.Errorf("%s: read %q %v, go-git %q %v", p, got, gerr, want, werr)
		}
	}
}
