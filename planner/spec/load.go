package spec

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Layout says where a GitOps repo keeps its specs and rendered output.
type Layout struct {
	// SpecsDir holds the cluster specs, searched recursively. Default
	// "clusters".
	SpecsDir string
	// RenderedDir is cairn's output; it is never read as specs, even when
	// it lies under SpecsDir, and no folder of the same name below SpecsDir
	// is either. Default "rendered".
	RenderedDir string
}

// DefaultLayout is the layout the README documents.
var DefaultLayout = Layout{SpecsDir: "clusters", RenderedDir: "rendered"}

// LoadRepo reads every spec of a GitOps repo. Files are read through an
// os.Root, so a symlink cannot pull in a file from outside the repo. The
// result is sorted by cluster name; any error in any file fails the load.
func LoadRepo(repo string, l Layout) ([]Cluster, error) {
	if l.SpecsDir == "" {
		l.SpecsDir = DefaultLayout.SpecsDir
	}
	if l.RenderedDir == "" {
		l.RenderedDir = DefaultLayout.RenderedDir
	}
	specs, rendered := path.Clean(filepath.ToSlash(l.SpecsDir)), path.Clean(filepath.ToSlash(l.RenderedDir))
	if !fs.ValidPath(specs) || !fs.ValidPath(rendered) {
		return nil, fmt.Errorf("specs dir %q and rendered dir %q must be relative paths inside the repo", l.SpecsDir, l.RenderedDir)
	}
	root, err := os.OpenRoot(repo)
	if err != nil {
		return nil, fmt.Errorf("open repo: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	if _, err := fs.Stat(fsys, specs); err != nil {
		return nil, fmt.Errorf("specs dir %s: %w", filepath.Join(repo, specs), bare(err))
	}
	var files []string
	err = fs.WalkDir(fsys, specs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// Skip the rendered dir, any folder of the same name below the specs
		// (as LoadPaths, and so `cairn validate`, does) and hidden folders.
		if d.IsDir() && p != specs && (p == rendered || d.Name() == path.Base(rendered) || strings.HasPrefix(d.Name(), ".")) {
			return fs.SkipDir
		}
		if isSpecFile(d, p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read specs: %w", err)
	}
	return loadFiles(fsys, repo, files)
}

// LoadPaths reads the given files and directories, as `cairn validate`
// does. A directory with a clusters/ folder is read as a GitOps repo (its
// specs only); any other directory is searched recursively for YAML files,
// skipping folders named "rendered" and hidden folders.
func LoadPaths(paths []string) ([]Cluster, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		if st, err := os.Stat(filepath.Join(p, DefaultLayout.SpecsDir)); err == nil && st.IsDir() {
			p = filepath.Join(p, DefaultLayout.SpecsDir)
		}
		err = filepath.WalkDir(p, func(fp string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && fp != p && (d.Name() == DefaultLayout.RenderedDir || strings.HasPrefix(d.Name(), ".")) {
				return fs.SkipDir
			}
			if isSpecFile(d, fp) {
				files = append(files, fp)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return loadFiles(osFS{}, "", files)
}

type osFS struct{}

func (osFS) Open(name string) (fs.File, error) { return os.Open(name) }

// isSpecFile reports whether a walked entry is read as a spec: a YAML file,
// or a symlink named like one. Symlinks are followed when read (inside the
// repo only, for LoadRepo) rather than skipped, so a linked spec is never
// silently missing from the desired state.
func isSpecFile(d fs.DirEntry, p string) bool {
	return (d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) && isYAML(p)
}

func isYAML(p string) bool {
	ext := strings.ToLower(path.Ext(p))
	return ext == ".yaml" || ext == ".yml"
}

func loadFiles(fsys fs.FS, base string, files []string) ([]Cluster, error) {
	var (
		all  []Cluster
		errs ErrorList
		seen = map[string]Cluster{}
	)
	for _, f := range files {
		display := f
		if base != "" {
			display = filepath.Join(base, filepath.FromSlash(f))
		}
		data, err := readLimited(fsys, f)
		if err != nil {
			errs = append(errs, &Error{File: display, Msg: err.Error()})
			continue
		}
		cs, err := Decode(display, data)
		var list ErrorList
		if errors.As(err, &list) {
			errs = append(errs, list...)
		}
		for _, c := range cs {
			name := c.Ref().Name
			if first, dup := seen[name]; dup {
				line, col := c.Source().Position("metadata.name")
				fl, _ := first.Source().Position("metadata.name")
				errs = append(errs, &Error{File: display, Line: line, Col: col, Path: "metadata.name",
					Msg: fmt.Sprintf("cluster name %q is already used by %s at %s:%d; names are unique in a repo (each renders to rendered/%s/)", name, first.Ref().Kind, first.Source().File, fl, name)})
				continue
			}
			seen[name] = c
			all = append(all, c)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b Cluster) int { return strings.Compare(a.Ref().Name, b.Ref().Name) })
	return all, nil
}

// readLimited reads a file but refuses one over the size limit without
// reading it whole.
func readLimited(fsys fs.FS, name string) ([]byte, error) {
	info, err := fs.Stat(fsys, name) // follows a symlink, without blocking on a FIFO
	if err != nil {
		if li, lerr := fs.Lstat(fsys, name); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("symlink cannot be followed: %w", bare(err))
		}
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(Limits.MaxBytes)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > Limits.MaxBytes {
		return nil, fmt.Errorf("file is larger than the %d-byte limit", Limits.MaxBytes)
	}
	return data, nil
}

// bare drops the operation and path of a *fs.PathError, whose path the
// caller already shows and whose operation ("statat") means nothing to a
// reader.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
