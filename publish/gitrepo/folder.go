package gitrepo

import (
	"fmt"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// MaxFolderFiles bounds the files Folder reads.
const MaxFolderFiles = 10000

// Folder returns the files under root (slash-separated) in commit c, by
// their paths from the repo's root: a Change that replaces root with them
// and one file edited changes that file alone. A folder holding anything
// but regular files (an executable, a symlink, a submodule) is refused,
// as a Change would write it back as regular files; so is one of more
// than MaxFolderFiles files.
func (r *Repo) Folder(c *object.Commit, root string) (map[string][]byte, error) {
	h, err := r.objs().subtree(c, root)
	if err != nil {
		return nil, fmt.Errorf("folder %s at %s: %w", root, c.Hash, err)
	}
	files := map[string][]byte{}
	if err := r.folderFiles(h, root, files); err != nil {
		return nil, fmt.Errorf("folder %s at %s: %w", root, c.Hash, err)
	}
	return files, nil
}

func (r *Repo) folderFiles(h plumbing.Hash, dir string, files map[string][]byte) error {
	t, err := r.objs().tree(h)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		p := path.Join(dir, e.Name)
		switch e.Mode {
		case filemode.Dir:
			if err := r.folderFiles(e.Hash, p, files); err != nil {
				return err
			}
			continue
		case filemode.Regular:
		default:
			return fmt.Errorf("%s is not a regular file (mode %s); cairn rewrites only folders of regular files", p, e.Mode)
		}
		if len(files) >= MaxFolderFiles {
			return fmt.Errorf("more than %d files", MaxFolderFiles)
		}
		data, err := r.blob(e.Hash)
		if err != nil {
			return err
		}
		files[p] = data
	}
	return nil
}
