package gitrepo

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// splitPath splits a slash-separated path of the repo into its names,
// refusing what git or a checkout would read otherwise: empty names, "."
// and "..", ".git", and backslashes.
func splitPath(p string) ([]string, error) {
	names := strings.Split(p, "/")
	for _, n := range names {
		switch {
		case n == "", n == ".", n == "..":
			return nil, fmt.Errorf("%q is not a name of a file or folder", n)
		case strings.EqualFold(n, ".git"):
			return nil, fmt.Errorf("%q is git's own folder", n)
		case strings.ContainsAny(n, "\\\x00"):
			return nil, fmt.Errorf("%q holds a backslash or a NUL", n)
		}
	}
	return names, nil
}

// folderTree is a folder being built from files: its files and its
// sub-folders.
type folderTree struct {
	files map[string][]byte
	dirs  map[string]*folderTree
}

// writeFolder writes files (by slash-separated path from the repo's root,
// each under root) as blobs and trees and returns the hash of the folder
// at root. The result is git's tree for those files whatever the order of
// the map: entries sorted as git sorts them, every file a regular file.
// The hashes are computed in memory first: a folder the store holds
// already (a pass that changes nothing) costs one lookup, not one a file.
func writeFolder(r *git.Repository, root string, files map[string][]byte) (plumbing.Hash, error) {
	top, err := newFolder(root, files)
	if err != nil || top == nil {
		return plumbing.ZeroHash, err
	}
	h, err := top.put(r, false)
	if err != nil || r.Storer.HasEncodedObject(h) == nil {
		return h, err
	}
	return top.put(r, true)
}

// hashFolder is writeFolder's hash, with nothing written.
func hashFolder(root string, files map[string][]byte) (plumbing.Hash, error) {
	top, err := newFolder(root, files)
	if err != nil || top == nil {
		return plumbing.ZeroHash, err
	}
	return top.put(nil, false)
}

// newFolder arranges files (each under root) as folders; nil for none.
func newFolder(root string, files map[string][]byte) (*folderTree, error) {
	if len(files) == 0 {
		return nil, nil
	}
	top := &folderTree{}
	for p, data := range files {
		rel, ok := strings.CutPrefix(p, root+"/")
		if !ok {
			return nil, fmt.Errorf("file %s is outside %s", p, root)
		}
		names, err := splitPath(rel)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", p, err)
		}
		f := top
		for _, n := range names[:len(names)-1] {
			if _, clash := f.files[n]; clash {
				return nil, fmt.Errorf("file %s: %s is a file and a folder", p, n)
			}
			if f.dirs == nil {
				f.dirs = map[string]*folderTree{}
			}
			if f.dirs[n] == nil {
				f.dirs[n] = &folderTree{}
			}
			f = f.dirs[n]
		}
		last := names[len(names)-1]
		if _, clash := f.dirs[last]; clash {
			return nil, fmt.Errorf("file %s: %s is a file and a folder", p, last)
		}
		if f.files == nil {
			f.files = map[string][]byte{}
		}
		f.files[last] = data
	}
	return top, nil
}

// put returns the folder's tree hash, writing its blobs and trees when
// write is set.
func (f *folderTree) put(r *git.Repository, write bool) (plumbing.Hash, error) {
	t := &object.Tree{}
	for n, data := range f.files {
		if _, clash := f.dirs[n]; clash {
			return plumbing.ZeroHash, fmt.Errorf("%s is a file and a folder", n)
		}
		h := plumbing.ComputeHash(plumbing.BlobObject, data)
		if write {
			var err error
			if h, err = storeBlob(r, data); err != nil {
				return plumbing.ZeroHash, err
			}
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: n, Mode: filemode.Regular, Hash: h})
	}
	for n, d := range f.dirs {
		h, err := d.put(r, write)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: n, Mode: filemode.Dir, Hash: h})
	}
	sortEntries(t.Entries)
	if !write {
		mem := &plumbing.MemoryObject{}
		if err := t.Encode(mem); err != nil {
			return plumbing.ZeroHash, err
		}
		return mem.Hash(), nil
	}
	return store(r, t)
}

// sortEntries orders tree entries as git does: by name, a folder's name
// as if it ended in "/".
func sortEntries(entries []object.TreeEntry) {
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return cmp.Compare(gitKey(a), gitKey(b)) })
}

// gitKey is the name git sorts a tree entry by.
func gitKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// storeBlob writes data as a blob unless the store holds it already.
func storeBlob(r *git.Repository, data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(plumbing.BlobObject, data)
	if r.Storer.HasEncodedObject(h) == nil {
		return h, nil
	}
	obj := r.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.Storer.SetEncodedObject(obj)
}

// store writes a tree or commit object unless the store holds it already.
func store(r *git.Repository, o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	mem := &plumbing.MemoryObject{}
	if err := o.Encode(mem); err != nil {
		return plumbing.ZeroHash, err
	}
	if r.Storer.HasEncodedObject(mem.Hash()) == nil {
		return mem.Hash(), nil
	}
	obj := r.Storer.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.Storer.SetEncodedObject(obj)
}
