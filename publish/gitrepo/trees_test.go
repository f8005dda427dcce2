package gitrepo

import (
	"math/rand/v2"
	"slices"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Replacing a folder in a tree keeps git's order for every tree and name
// (names that sort around "/": "a", "a-b", "a.b", "a/"): the result is
// the tree sorted from scratch, with and without the cache, and the
// cache answers a replacement again with the same tree.
func TestReplaceTreeKeepsGitsOrder(t *testing.T) {
	repo, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "a-b", "a.b", "a0", "ab", "b", "-", ".x", "z", "a_b", "a~"}
	rnd := rand.New(rand.NewPCG(1, 2))
	blob, err := storeBlob(repo, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := store(repo, &object.Tree{Entries: []object.TreeEntry{{Name: "k", Mode: filemode.Regular, Hash: blob}}})
	if err != nil {
		t.Fatal(err)
	}
	cached := objects{repo: repo, cache: &treeCache{}}
	for i := range 300 {
		var entries []object.TreeEntry
		for _, n := range names {
			switch rnd.IntN(3) {
			case 0:
				entries = append(entries, object.TreeEntry{Name: n, Mode: filemode.Regular, Hash: blob})
			case 1:
				entries = append(entries, object.TreeEntry{Name: n, Mode: filemode.Dir, Hash: sub})
			}
		}
		sortEntries(entries)
		h, err := store(repo, &object.Tree{Entries: entries})
		if err != nil {
			t.Fatal(err)
		}
		tree, err := repo.TreeObject(h)
		if err != nil {
			t.Fatal(err)
		}
		name := names[rnd.IntN(len(names))]
		with := sub
		if rnd.IntN(4) == 0 {
			with = plumbing.ZeroHash // removed
		}
		want := slices.DeleteFunc(slices.Clone(entries), func(e object.TreeEntry) bool { return e.Name == name })
		if !with.IsZero() {
			want = append(want, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: with})
		}
		sortEntries(want)
		var wantHash plumbing.Hash
		if len(want) > 0 {
			if wantHash, err = store(repo, &object.Tree{Entries: want}); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range []objects{{repo: repo}, cached, cached} {
			got, err := o.replaceTree(tree, []string{name}, with)
			if err != nil {
				t.Fatal(err)
			}
			if got != wantHash {
				t.Fatalf("case %d: %s in %v: %s, sorted from scratch %s", i, name, entries, got, wantHash)
			}
		}
	}
}
