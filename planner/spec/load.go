package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
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
	// Namespaces, when set, are the only namespaces a spec may name (the
	// operator's allow-list, cairn's --allowed-namespaces); a spec that
	// names none is deployed where Argo CD or Flux puts it.
	Namespaces []string
}

// DefaultLayout is the layout the README documents.
var DefaultLayout = Layout{SpecsDir: "clusters", RenderedDir: "rendered"}

// LoadRepo reads every spec of a GitOps repo. Files are read through an
// os.Root, so a symlink cannot pull in a file from outside the repo, and
// within RepoLimits. The result is sorted by cluster name; any error in
// any file fails the load.
func LoadRepo(repo string, l Layout) ([]Cluster, error) { return builtin.LoadRepo(repo, l) }

// LoadRepo reads every spec of a GitOps repo, of the kinds s serves (see
// the function LoadRepo).
func (s Served) LoadRepo(repo string, l Layout) ([]Cluster, error) {
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
	if _, err := root.Stat(specs); err != nil {
		return nil, fmt.Errorf("specs dir %s: %w", filepath.Join(repo, specs), bare(err))
	}
	// Skip the rendered dir, any folder of the same name below the specs
	// (as LoadPaths, and so `cairn validate`, does) and hidden folders.
	w := &walker{o: root, limit: RepoLimits.MaxEntries, want: isSpecFile,
		skip: func(p string, d fs.DirEntry) bool {
			return p == rendered || d.Name() == path.Base(rendered) || strings.HasPrefix(d.Name(), ".")
		}}
	if err := w.walk(specs); err != nil {
		return nil, walkError(filepath.Join(repo, specs), err)
	}
	clusters, err := s.loadFiles(root, repo, w.files)
	if err != nil {
		return nil, err
	}
	if err := allowedNamespaces(clusters, l.Namespaces); err != nil {
		return nil, err
	}
	return clusters, nil
}

// allowedNamespaces refuses the specs that name a namespace outside
// allowed (when set), each at the place it is written.
func allowedNamespaces(clusters []Cluster, allowed []string) error {
	if len(allowed) == 0 {
		return nil
	}
	var errs ErrorList
	for _, c := range clusters {
		if ns := c.Ref().Namespace; ns != "" && !slices.Contains(allowed, ns) {
			line, col := c.Source().Position("metadata.namespace")
			errs = append(errs, &Error{File: c.Source().File, Line: line, Col: col, Path: "metadata.namespace",
				Msg: fmt.Sprintf("namespace %s is not one cairn may deploy to here (--allowed-namespaces: %s)", strictyaml.Quote(ns), strings.Join(allowed, ", "))})
		}
	}
	return errs.Err()
}

// LoadPaths reads the given files and directories, as `cairn validate`
// does. A directory with a clusters/ folder is read as a GitOps repo (its
// specs only); any other directory is searched recursively for YAML files,
// skipping folders named "rendered" and hidden folders.
func LoadPaths(paths []string) ([]Cluster, error) { return builtin.LoadPaths(paths) }

// LoadPaths reads the given files and directories, of the kinds s serves
// (see the function LoadPaths).
func (s Served) LoadPaths(paths []string) ([]Cluster, error) {
	w := &walker{o: OS, limit: RepoLimits.MaxEntries, want: isSpecFile,
		skip: func(_ string, d fs.DirEntry) bool {
			return d.Name() == DefaultLayout.RenderedDir || strings.HasPrefix(d.Name(), ".")
		}}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			w.files = append(w.files, p)
			continue
		}
		if st, err := os.Stat(filepath.Join(p, DefaultLayout.SpecsDir)); err == nil && st.IsDir() {
			p = filepath.Join(p, DefaultLayout.SpecsDir)
		}
		if err := w.walk(filepath.ToSlash(p)); err != nil {
			return nil, walkError(p, err)
		}
	}
	return s.loadFiles(OS, "", w.files)
}

func walkError(dir string, err error) error {
	if errors.Is(err, errTooManyEntries) {
		return fmt.Errorf("read specs: %s holds more than %d files and folders; cairn reads at most that many", dir, RepoLimits.MaxEntries)
	}
	return fmt.Errorf("read specs: %w", err)
}

// isSpecFile reports whether a walked entry is read as a spec: anything
// but a folder named like a YAML file. Symlinks are followed when read
// (inside the repo only, for LoadRepo) rather than skipped, so a linked
// spec is never silently missing from the desired state; a FIFO, a device
// or a link to a folder is an error when read.
func isSpecFile(p string, d fs.DirEntry) bool {
	return !d.IsDir() && isYAML(p)
}

func isYAML(p string) bool {
	ext := strings.ToLower(path.Ext(p))
	return ext == ".yaml" || ext == ".yml"
}

// loadFiles decodes files, within RepoLimits: past a limit it stops with
// an error saying which.
func (s Served) loadFiles(o Opener, base string, files []string) ([]Cluster, error) {
	if len(files) > RepoLimits.MaxFiles {
		return nil, fmt.Errorf("%d spec files; cairn reads at most %d", len(files), RepoLimits.MaxFiles)
	}
	var (
		all     []Cluster
		errs    ErrorList
		seen    = map[string]Cluster{}
		read    int
		stopped bool
	)
	for _, f := range files {
		display := DisplayPath(filepath.Join(base, filepath.FromSlash(f)))
		if stop := repoLimitReached(read, len(all), len(errs)); stop != "" {
			errs = append(errs, &Error{File: display, Msg: "not read: " + stop})
			stopped = true
			break
		}
		data, err := ReadBounded(o, f, Limits.MaxBytes)
		if err != nil {
			errs = append(errs, &Error{File: display, Msg: err.Error()})
			continue
		}
		read += len(data)
		cs, err := s.Decode(display, data)
		var list ErrorList
		if errors.As(err, &list) {
			errs = append(errs, list...)
		}
		for _, c := range cs {
			if err := addCluster(seen, c, display); err != nil {
				errs = append(errs, err)
				continue
			}
			all = append(all, c)
		}
	}
	errs = append(errs, backupSets(all)...)
	if stop := repoLimitReached(read, len(all), 0); stop != "" && !stopped {
		errs = append(errs, &Error{File: DisplayPath(filepath.Join(base, filepath.FromSlash(files[len(files)-1]))), Msg: "with this file, " + stop})
	}
	if len(errs) > RepoLimits.MaxErrors+1 {
		errs = append(errs[:RepoLimits.MaxErrors], &Error{File: errs[RepoLimits.MaxErrors].File,
			Msg: fmt.Sprintf("%d more problems not shown; cairn reports at most %d", len(errs)-RepoLimits.MaxErrors, RepoLimits.MaxErrors)})
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b Cluster) int { return strings.Compare(a.Ref().Name, b.Ref().Name) })
	return all, nil
}

// addCluster records c under its name, or says which cluster of the repo
// has it already.
func addCluster(seen map[string]Cluster, c Cluster, display string) *Error {
	name := c.Ref().Name
	if first, dup := seen[name]; dup {
		line, col := c.Source().Position("metadata.name")
		fl, _ := first.Source().Position("metadata.name")
		return &Error{File: display, Line: line, Col: col, Path: "metadata.name",
			Msg: fmt.Sprintf("cluster name %q is already used by %s at %s:%d; names are unique in a repo (each renders to rendered/%s/)", name, first.Ref().Kind, first.Source().File, fl, name)}
	}
	seen[name] = c
	return nil
}

// repoLimitReached says which total of RepoLimits the files read so far
// are past, or "".
func repoLimitReached(read, clusters, problems int) string {
	l := RepoLimits
	switch {
	case read > l.MaxBytes:
		return fmt.Sprintf("the specs hold more than %d bytes; cairn reads at most that many", l.MaxBytes)
	case clusters > l.MaxDocuments:
		return fmt.Sprintf("the specs hold more than %d clusters; cairn reads at most that many", l.MaxDocuments)
	case problems >= l.MaxErrors:
		return fmt.Sprintf("%d problems already; fix those first", problems)
	}
	return ""
}

// DisplayPath is a file name from a repo as errors show it: as it is,
// or, when it holds a control character, a quote or a backtick, quoted
// with Go's escapes, so that a hostile name cannot forge lines in a
// report or break out of a Markdown code block.
func DisplayPath(name string) string {
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '`' || r == '"' || (r >= 0x80 && !unicode.IsPrint(r)) {
			return strconv.Quote(name)
		}
	}
	return name
}
