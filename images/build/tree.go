package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// A tree is the file system of one layer, before it is written: every
// path in it, owned and dated as the image has it, whatever the files on
// disk say (dpkg -x run by a user, a checkout's mtimes).
type tree struct {
	entries map[string]*entry
}

// An entry is one path of a tree. A regular file's content is src (a
// file on disk) or data.
type entry struct {
	name     string // without a leading slash
	mode     fs.FileMode
	uid, gid int
	src      string
	data     []byte
	link     string // a symlink's target
}

func newTree() *tree { return &tree{entries: map[string]*entry{}} }

// addDir adds the tree below dir on disk at prefix, owned by root. Paths
// (relative to dir) for which skip returns true are left out, with
// everything below them.
func (t *tree) addDir(dir, prefix string, skip func(rel string) bool) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return t.addPath(p, path.Join(prefix, rel))
	})
}

// addPath adds one file, directory or symlink from disk at name.
func (t *tree) addPath(src, name string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("add %s: %w", name, err)
	}
	e := &entry{name: name, mode: fi.Mode() & (fs.ModeType | fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
	switch {
	case fi.Mode().IsRegular():
		e.src = src
	case fi.Mode()&fs.ModeSymlink != 0:
		if e.link, err = os.Readlink(src); err != nil {
			return fmt.Errorf("add %s: %w", name, err)
		}
	case fi.IsDir():
	default:
		return fmt.Errorf("add %s: %s is not a file, directory or symlink", name, fi.Mode().Type())
	}
	t.put(e)
	return nil
}

// put adds or replaces an entry, and the directories above it that the
// tree does not hold yet (0755, root).
func (t *tree) put(e *entry) {
	e.name = strings.Trim(path.Clean("/"+e.name), "/")
	t.entries[e.name] = e
	for d := path.Dir(e.name); d != "." && d != "/"; d = path.Dir(d) {
		if _, ok := t.entries[d]; ok {
			break
		}
		t.entries[d] = &entry{name: d, mode: fs.ModeDir | 0o755}
	}
}

// file adds a regular file with the given content.
func (t *tree) file(name string, mode fs.FileMode, data []byte) {
	t.put(&entry{name: name, mode: mode, data: data})
}

// dir adds a directory owned by uid:gid, with Unix mode bits (0o3777:
// setgid and sticky, as chmod reads them).
func (t *tree) dir(name string, mode uint32, uid, gid int) {
	t.put(&entry{name: name, mode: fs.ModeDir | unixMode(mode), uid: uid, gid: gid})
}

// unixMode turns chmod's bits into a FileMode, whose setuid, setgid and
// sticky bits are not chmod's.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	for bit, fm := range map[uint32]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
		if m&bit != 0 {
			mode |= fm
		}
	}
	return mode
}

// symlink adds a symbolic link.
func (t *tree) symlink(name, target string) {
	t.put(&entry{name: name, mode: fs.ModeSymlink | 0o777, link: target})
}

// has reports whether the tree holds name.
func (t *tree) has(name string) bool {
	_, ok := t.entries[strings.Trim(name, "/")]
	return ok
}

// writeTar writes the tree as an uncompressed layer: entries in path
// order, every time mtime, no user or group names, so that the same tree
// gives the same bytes.
func (t *tree) writeTar(w io.Writer, mtime time.Time) error {
	names := make([]string, 0, len(t.entries))
	for n := range t.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		if err := t.entries[n].write(tw, mtime); err != nil {
			return fmt.Errorf("layer entry %s: %w", n, err)
		}
	}
	return tw.Close()
}

func (e *entry) write(tw *tar.Writer, mtime time.Time) error {
	h := &tar.Header{Name: e.name, Mode: int64(e.mode.Perm()), Uid: e.uid, Gid: e.gid, ModTime: mtime}
	if e.mode&fs.ModeSetuid != 0 {
		h.Mode |= 0o4000
	}
	if e.mode&fs.ModeSetgid != 0 {
		h.Mode |= 0o2000
	}
	if e.mode&fs.ModeSticky != 0 {
		h.Mode |= 0o1000
	}
	switch {
	case e.mode.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		return tw.WriteHeader(h)
	case e.mode&fs.ModeSymlink != 0:
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		return tw.WriteHeader(h)
	case e.src == "":
		h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(e.data)
		return err
	}
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
