package fleet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// person signs the commits a person makes: the specs and the merges.
func person(when time.Time) object.Signature {
	return object.Signature{Name: "p", Email: "p@example.com", When: when}
}

// written is when WriteBare's commit was made, fixed so that the same
// files give the same commit.
var written = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// WriteBare makes a bare repo at path whose main branch is one commit of
// files (paths relative to the repo's root), and returns the commit. It
// writes the objects directly, without a worktree, so that 10,000 specs
// take seconds.
func WriteBare(path string, files map[string]string) (plumbing.Hash, error) {
	repo, err := git.PlainInitWithOptions(path, &git.PlainInitOptions{Bare: true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("init %s: %w", path, err)
	}
	root := &dir{}
	for p, content := range files {
		root.add(strings.Split(p, "/"), content)
	}
	tree, err := root.write(repo.Storer)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write the tree: %w", err)
	}
	sig := person(written)
	h, err := encode(repo.Storer, &object.Commit{Author: sig, Committer: sig, Message: "specs of the fleet\n", TreeHash: tree})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return h, repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", h))
}

// Merge merges branch into main of the bare repo at path as a person
// pressing "Merge" would: a merge commit whose parents are main's head
// and the branch's. Main must not have moved since the branch was cut
// (main's head is an ancestor of the branch's), so the merge's tree is
// the branch's. It returns the merge commit, or main's head when main
// holds the branch already.
func Merge(path, branch string) (plumbing.Hash, error) {
	repo, err := git.PlainOpen(path)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	head, err := commitOf(repo, "main")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tip, err := commitOf(repo, branch)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if ok, _ := tip.IsAncestor(head); ok {
		return head.Hash, nil // merged already
	}
	if ok, err := head.IsAncestor(tip); err != nil || !ok {
		return plumbing.ZeroHash, fmt.Errorf("merge %s: main moved on since the branch was cut (%v)", branch, err)
	}
	sig := person(time.Now())
	h, err := encode(repo.Storer, &object.Commit{Author: sig, Committer: sig, Message: "Merge branch '" + branch + "'\n",
		TreeHash: tip.TreeHash, ParentHashes: []plumbing.Hash{head.Hash, tip.Hash}})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return h, repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", h))
}

func commitOf(repo *git.Repository, branch string) (*object.Commit, error) {
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return nil, fmt.Errorf("branch %s: %w", branch, err)
	}
	return repo.CommitObject(ref.Hash())
}

// dir is a folder of the tree WriteBare writes.
type dir struct {
	files map[string]string
	dirs  map[string]*dir
}

func (d *dir) add(parts []string, content string) {
	if len(parts) == 1 {
		if d.files == nil {
			d.files = map[string]string{}
		}
		d.files[parts[0]] = content
		return
	}
	if d.dirs == nil {
		d.dirs = map[string]*dir{}
	}
	sub := d.dirs[parts[0]]
	if sub == nil {
		sub = &dir{}
		d.dirs[parts[0]] = sub
	}
	sub.add(parts[1:], content)
}

// write stores the folder's blobs and trees and returns its tree.
func (d *dir) write(s storer.EncodedObjectStorer) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	for name, content := range d.files {
		obj := s.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, err := obj.Writer()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := w.Write([]byte(content)); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := w.Close(); err != nil {
			return plumbing.ZeroHash, err
		}
		h, err := s.SetEncodedObject(obj)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
	}
	for name, sub := range d.dirs {
		h, err := sub.write(s)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	// Git orders a tree's entries by name, a folder's as if it ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(key(a), key(b)) })
	return encode(s, &object.Tree{Entries: entries})
}

// encode stores an object (a tree or a commit).
func encode(s storer.EncodedObjectStorer, o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}
