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
	// it lies under SpecsDir. Default "rendered".
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
		return nil, fmt.Errorf("specs dir %s: %w", filepath.Join(repo, specs), err)
	}
	var files []string
	err = fs.WalkDir(fsys, specs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == rendered || strings.HasPrefix(d.Name(), ".") && p != specs) {
			return fs.SkipDir
		}
		if d.Type().IsRegular() && isYAML(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read specs: %w", err)
	}
	return loadFiles(fsys, repo, files)
}

// LoadPaths reads the given files and directories (directories
// recursively, skipping any folder named "rendered" and hidden folders),
// as `cairn validate` does.
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
		err = filepath.WalkDir(p, func(fp string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && fp != p && (d.Name() == DefaultLayout.RenderedDir || strings.HasPrefix(d.Name(), ".")) {
				return fs.SkipDir
			}
			if d.Type().IsRegular() && isYAML(fp) {
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
