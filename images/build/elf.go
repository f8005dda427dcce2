package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// systemLibDirs are the directories Debian's dynamic loader searches
// without an ld.so.cache (`ld.so --list-diagnostics`: path.system_dirs).
// The images carry no cache, so a library the programs need must sit in
// one of these, or in the program's own RUNPATH.
var systemLibDirs = []string{"lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib", "usr/lib"}

// elfDeps returns the DT_NEEDED sonames and the RUNPATH/RPATH directories
// of the file at p; ok is false when p is not an ELF file.
func elfDeps(p string) (needed, runpath []string, ok bool, err error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, false, err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || !bytes.Equal(magic, []byte(elf.ELFMAG)) {
		return nil, nil, false, nil
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read %s: %w", p, err)
	}
	if ef.Type != elf.ET_EXEC && ef.Type != elf.ET_DYN {
		return nil, nil, false, nil
	}
	// A static program has no dynamic section: no libraries, no error.
	if needed, err = ef.DynString(elf.DT_NEEDED); err != nil {
		return nil, nil, true, fmt.Errorf("read %s: %w", p, err)
	}
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		rp, _ := ef.DynString(tag)
		for _, s := range rp {
			runpath = append(runpath, strings.Split(s, ":")...)
		}
	}
	return needed, runpath, true, nil
}

// resolveIn follows the symlinks of name (a path in the image) inside
// root, as the image's loader would see them: an absolute target starts
// again at root. It returns the resolved path in the image.
func resolveIn(root, name string) (string, error) {
	rest := strings.Split(strings.Trim(path.Clean("/"+name), "/"), "/")
	cur := ""
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			if cur == "." {
				cur = ""
			}
			continue
		}
		next := path.Join(cur, c)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("%s: too many symlinks", name)
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			cur = ""
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, nil
}

// findLib returns the image path a soname loads from for an ELF file at
// from (whose RUNPATH is runpath), and the file it resolves to; "" when
// the image lacks it.
func findLib(root, from, soname string, runpath []string) (string, string) {
	dirs := make([]string, 0, len(runpath)+len(systemLibDirs))
	for _, d := range runpath {
		dirs = append(dirs, strings.TrimPrefix(strings.ReplaceAll(d, "$ORIGIN", "/"+path.Dir(from)), "/"))
	}
	for _, d := range append(dirs, systemLibDirs...) {
		p := path.Join(d, soname)
		r, err := resolveIn(root, p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(filepath.Join(root, r)); err == nil && fi.Mode().IsRegular() {
			return p, r
		}
	}
	return "", ""
}

// missingLibs walks the image root and returns, sorted, one line
// "file: soname" for every library an ELF file needs that the image
// cannot load: the check that the image's closure is complete, as ldd
// would report "not found" inside the image.
func missingLibs(root string) ([]string, error) {
	var missing []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		needed, runpath, ok, err := elfDeps(p)
		if err != nil || !ok {
			return err
		}
		for _, so := range needed {
			if img, _ := findLib(root, rel, so, runpath); img == "" {
				missing = append(missing, rel+": "+so)
			}
		}
		return nil
	})
	sort.Strings(missing)
	return missing, err
}

// libsFor returns the image paths (every symlink on the way and the file)
// of the libraries that files (ELF files of root, among others) need,
// recursively, that base cannot load itself: what a second major's
// programs bring into an image of the first.
func libsFor(root, base string, files []string) ([]string, error) {
	queue := append([]string(nil), files...)
	add := map[string]bool{}
	seen := map[string]bool{}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		if seen[f] {
			continue
		}
		seen[f] = true
		needed, runpath, ok, err := elfDeps(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for _, so := range needed {
			if img, _ := findLib(base, f, so, runpath); img != "" {
				continue
			}
			img, file := findLib(root, f, so, runpath)
			if img == "" {
				return nil, fmt.Errorf("%s needs %s, which neither image has", f, so)
			}
			for _, p := range symlinkChain(root, img) {
				add[p] = true
			}
			add[file] = true
			queue = append(queue, file)
		}
	}
	out := make([]string, 0, len(add))
	for p := range add {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// symlinkChain returns name and every symlink name leads through in root
// (libfoo.so.1 -> libfoo.so.1.2.3), not the directories above them.
func symlinkChain(root, name string) []string {
	chain := []string{name}
	for i := 0; i < 40; i++ {
		target, err := os.Readlink(filepath.Join(root, name))
		if err != nil {
			break
		}
		if strings.HasPrefix(target, "/") {
			name = strings.TrimPrefix(path.Clean(target), "/")
		} else {
			name = path.Join(path.Dir(name), target)
		}
		chain = append(chain, name)
	}
	return chain
}
