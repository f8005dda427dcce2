package gitrepo

import (
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// objects reads and writes a repository's trees. With a cache, decoded
// trees are kept by hash and the results of replaceTree remembered: both
// are functions of hashes, so never stale. A fleet's rendered/ folder has
// an entry a cluster, and a pass makes or proves a commit for each step;
// without the cache, each of those decodes, sorts and hashes the whole
// folder again, and a pass is quadratic in the fleet.
type objects struct {
	repo  *git.Repository
	cache *treeCache // nil: nothing kept
}

// treeCache is what a Repo keeps of its trees; both maps are cleared
// when full.
type treeCache struct {
	mu       sync.Mutex
	trees    map[plumbing.Hash]*object.Tree
	replaced map[replaceKey]plumbing.Hash
}

type replaceKey struct {
	tree, sub plumbing.Hash
	path      string
}

// maxTrees bounds the trees and replacements a cache keeps.
const maxTrees = 8192

func (o objects) tree(h plumbing.Hash) (*object.Tree, error) {
	if o.cache == nil {
		return o.repo.TreeObject(h)
	}
	o.cache.mu.Lock()
	t, ok := o.cache.trees[h]
	o.cache.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := o.repo.TreeObject(h)
	if err != nil {
		return nil, err
	}
	o.cache.mu.Lock()
	defer o.cache.mu.Unlock()
	if o.cache.trees == nil || len(o.cache.trees) >= maxTrees {
		o.cache.trees = map[plumbing.Hash]*object.Tree{}
	}
	o.cache.trees[h] = t
	return t, nil
}

// subtree is the hash of the folder at root (slash-separated) in c.
func (o objects) subtree(c *object.Commit, root string) (plumbing.Hash, error) {
	h := c.TreeHash
	for _, n := range strings.Split(root, "/") {
		t, err := o.tree(h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		e, err := t.FindEntry(n)
		if err != nil {
			return plumbing.ZeroHash, object.ErrDirectoryNotFound
		}
		if e.Mode != filemode.Dir {
			return plumbing.ZeroHash, object.ErrDirectoryNotFound
		}
		h = e.Hash
	}
	return h, nil
}

// folder is the tree hash of the folder at root in c; zero when c has no
// such folder.
func (o objects) folder(c *object.Commit, root string) plumbing.Hash {
	h, err := o.subtree(c, root)
	if err != nil {
		return plumbing.ZeroHash
	}
	return h
}

// replaceTree writes the tree t with the folder at path set to sub
// (removed when sub is zero) and returns its hash; the zero hash when the
// result is empty.
func (o objects) replaceTree(t *object.Tree, path []string, sub plumbing.Hash) (plumbing.Hash, error) {
	key := replaceKey{tree: t.Hash, sub: sub, path: strings.Join(path, "/")}
	if o.cache != nil && !t.Hash.IsZero() {
		o.cache.mu.Lock()
		h, ok := o.cache.replaced[key]
		o.cache.mu.Unlock()
		if ok {
			return h, nil
		}
	}
	h, err := o.replace(t, path, sub)
	if err != nil || o.cache == nil || t.Hash.IsZero() {
		return h, err
	}
	o.cache.mu.Lock()
	defer o.cache.mu.Unlock()
	if o.cache.replaced == nil || len(o.cache.replaced) >= maxTrees {
		o.cache.replaced = map[replaceKey]plumbing.Hash{}
	}
	o.cache.replaced[key] = h
	return h, nil
}

func (o objects) replace(t *object.Tree, path []string, sub plumbing.Hash) (plumbing.Hash, error) {
	h := sub
	if len(path) > 1 {
		child := &object.Tree{}
		if e, err := t.FindEntry(path[0]); err == nil && e.Mode == filemode.Dir {
			if child, err = o.tree(e.Hash); err != nil {
				return plumbing.ZeroHash, err
			}
		}
		var err error
		if h, err = o.replaceTree(child, path[1:], sub); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	// The entries stay in git's order (a folder's name sorts as if it
	// ended in "/"): the one named path[0] goes, and the folder comes in
	// at its place when it is not empty. One copy, no sort.
	entries := make([]object.TreeEntry, 0, len(t.Entries)+1)
	folder := object.TreeEntry{Name: path[0], Mode: filemode.Dir, Hash: h}
	placed := h.IsZero()
	for _, e := range t.Entries {
		if e.Name == path[0] {
			continue
		}
		if !placed && gitKey(e) > gitKey(folder) {
			entries, placed = append(entries, folder), true
		}
		entries = append(entries, e)
	}
	if !placed {
		entries = append(entries, folder)
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	return store(o.repo, &object.Tree{Entries: entries})
}
