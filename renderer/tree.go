package renderer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Tree is a set of rendered files, by slash-separated path relative to the
// GitOps repo's root.
type Tree map[string][]byte

// Paths returns the tree's paths, sorted.
func (t Tree) Paths() []string {
	out := make([]string, 0, len(t))
	for p := range t {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Write makes dir/<root> hold exactly the tree's files under root: files
// are written only when their bytes differ, and files under root that the
// tree does not have are removed. Running it twice changes nothing. root
// must be a folder of the tree, such as "rendered/my-db".
func (t Tree) Write(dir, root string) (changed int, err error) {
	if parts := strings.Split(root, "/"); len(parts) != 2 || parts[0] != "rendered" || parts[1] == "" || parts[1] == "." || parts[1] == ".." {
		return 0, fmt.Errorf("write: %q is not a cluster's folder rendered/<cluster>", root)
	}
	base := filepath.Join(dir, filepath.FromSlash(root))
	want := map[string]bool{}
	for _, p := range t.Paths() {
		if !strings.HasPrefix(p, root+"/") {
			return changed, fmt.Errorf("write %s: %s is outside %s", root, p, root)
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		want[full] = true
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, t[p]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return changed, err
		}
		if err := writeAtomic(full, t[p]); err != nil {
			return changed, err
		}
		changed++
	}
	err = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || want[p] {
			return err
		}
		changed++
		return os.Remove(p)
	})
	if err != nil && !os.IsNotExist(err) {
		return changed, err
	}
	return changed, removeEmptyDirs(base)
}

// writeAtomic writes through a temporary file and a rename, so a reader
// never sees half a file.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cairn-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func removeEmptyDirs(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			sub := filepath.Join(dir, e.Name())
			if err := removeEmptyDirs(sub); err != nil {
				return err
			}
			if rest, _ := os.ReadDir(sub); len(rest) == 0 {
				if err := os.Remove(sub); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
