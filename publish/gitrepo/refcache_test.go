package gitrepo

import (
	"context"
	"maps"
	"strings"
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
// kind of write cairn makes (branches pushed alone and together, records,
// fetches with branches pruned, and a branch removed), but for the
// copies of the remote's refs (remote-tracking branches, records): those
// are never written to a file, and are what the remote has.
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
		remote, err := git.PlainOpen(bare)
		if err != nil {
			t.Fatal(err)
		}
		inMemory, onDisk := refsOf(t, r.repo), refsOf(t, files)
		own, copies := map[string]string{}, map[string]string{}
		for n, ref := range inMemory {
			if copyOfRemote(plumbing.ReferenceName(n)) {
				copies[n] = ref
			} else {
				own[n] = ref
			}
		}
		if !maps.Equal(own, onDisk) {
			t.Errorf("%s: the clone's own refs in memory %v, the files %v", when, own, onDisk)
		}
		// Every copy is the remote's ref, and the remote's branches and
		// records fetched so far are all copied (the base branch and
		// cairn's step branches; records once fetched or written).
		want := map[string]string{}
		for n, ref := range refsOf(t, remote) {
			name := plumbing.ReferenceName(n)
			switch {
			case name.IsBranch():
				local := plumbing.NewRemoteReferenceName("origin", name.Short())
				want[local.String()] = plumbing.NewHashReference(local, plumbingHash(ref)).String()
			case copyOfRemote(name):
				want[n] = ref
			}
		}
		for n, ref := range copies {
			if want[n] != ref {
				t.Errorf("%s: the clone's copy %s, the remote's %q", when, ref, want[n])
			}
		}
		for n := range want {
			if _, ok := copies[n]; !ok && (strings.HasPrefix(n, "refs/remotes/origin/cairn/") || n == "refs/remotes/origin/main") {
				t.Errorf("%s: the remote's %s has no copy in the clone", when, n)
			}
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

// plumbingHash is the hash of a ref as refsOf prints it ("<hash> <name>").
func plumbingHash(ref string) plumbing.Hash {
	h, _, _ := strings.Cut(ref, " ")
	return plumbing.NewHash(h)
}
