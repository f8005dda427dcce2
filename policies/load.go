package policies

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
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// Limits bound what a repo's policies may cost to load, and to decide one
// step with.
type Limits struct {
	// MaxEntries is the most entries of the policies folder listed.
	MaxEntries int
	// MaxFiles is the most policy files read.
	MaxFiles int
	// MaxBytes is the most bytes read, all files together; each file is
	// bounded as a spec is (strictyaml.DefaultLimits).
	MaxBytes int
	// MaxRules is the most CEL rules, all files together.
	MaxRules int
	// MaxCost bounds the CEL rules together on one step: their estimated
	// costs when they are loaded, their actual costs when they run.
	MaxCost uint64
}

// RepoLimits bound a repo's policies. One step costs at most MaxCost of
// CEL whatever the rules and however many (about 20 ms on the machines
// the tests run on; a typical rule costs a few hundred), so a plan of 15
// steps at most about a third of a second.
var RepoLimits = Limits{MaxEntries: 1000, MaxFiles: 100, MaxBytes: 2 << 20, MaxRules: 100, MaxCost: MaxRuleCost}

// LoadDir reads every policy file in dir (*.yaml, *.yml; a missing dir
// holds none) and returns their policies, each built for time now. CEL
// rules are compiled and type-checked here: a bad rule is an error with
// file:line, not a failure at plan time.
//
// dir's parent is taken as the repo: files are read through an os.Root
// of it, so neither dir nor a file in it can be a symlink out of the
// repo, and only regular files within RepoLimits are read (a FIFO, a
// device or a file over the limit is an error, and its content is never
// shown).
func LoadDir(dir string, now time.Time) (Set, error) {
	root, err := os.OpenRoot(filepath.Dir(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read policies: %w", err)
	}
	defer root.Close()
	names, err := listPolicies(root, filepath.Base(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read policies %s: %w", spec.DisplayPath(dir), err)
	}
	l := newLoader(now)
	read := 0
	for _, name := range names {
		if l.full { // past a limit: the load fails already
			break
		}
		display := spec.DisplayPath(filepath.Join(dir, name))
		if read > RepoLimits.MaxBytes {
			l.errs = append(l.errs, &strictyaml.Error{File: display, Msg: fmt.Sprintf("not read: the policy files before it hold more than %d bytes", RepoLimits.MaxBytes)})
			break
		}
		data, err := spec.ReadBounded(root, path.Join(filepath.Base(dir), name), strictyaml.DefaultLimits.MaxBytes)
		if err != nil {
			l.errs = append(l.errs, &strictyaml.Error{File: display, Msg: err.Error()})
			continue
		}
		read += len(data)
		l.load(display, data)
	}
	return l.result()
}

// listPolicies lists the names of the policy files in dir, sorted,
// reading at most RepoLimits.MaxEntries entries.
func listPolicies(root *os.Root, dir string) ([]string, error) {
	f, err := root.OpenFile(dir, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, bare(err)
	}
	defer f.Close()
	var names []string
	for n := 0; ; {
		batch, err := f.ReadDir(256)
		n += len(batch)
		if n > RepoLimits.MaxEntries {
			return nil, fmt.Errorf("more than %d entries; cairn reads at most that many", RepoLimits.MaxEntries)
		}
		for _, e := range batch {
			ext := strings.ToLower(path.Ext(e.Name()))
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				names = append(names, e.Name())
			}
		}
		if errors.Is(err, io.EOF) || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, bare(err)
		}
	}
	if len(names) > RepoLimits.MaxFiles {
		return nil, fmt.Errorf("%d policy files; cairn reads at most %d", len(names), RepoLimits.MaxFiles)
	}
	slices.Sort(names)
	return names, nil
}

// maxErrors is how many problems of a repo's policies are worth reading;
// past it, loading stops.
const maxErrors = 200

// Load decodes the policy documents of one file.
func Load(file string, data []byte, now time.Time) (Set, error) {
	l := newLoader(now)
	l.load(file, data)
	return l.result()
}

// loader builds the policies of one repo, counting its rules and their
// cost against RepoLimits, and compiling each distinct expression once.
type loader struct {
	now      time.Time
	set      Set
	errs     strictyaml.ErrorList
	compiled map[string]compiled
	rules    int
	cost     uint64
	full     bool
}

func newLoader(now time.Time) *loader {
	return &loader{now: now, compiled: map[string]compiled{}}
}

func (l *loader) result() (Set, error) {
	if err := l.errs.Err(); err != nil {
		return nil, err
	}
	return l.set, nil
}

func (l *loader) load(file string, data []byte) {
	docs, errs := strictyaml.Parse(file, data, strictyaml.DefaultLimits)
	l.errs = append(l.errs, errs...)
	for _, doc := range docs {
		if len(l.errs) >= maxErrors {
			l.errs = append(l.errs, &strictyaml.Error{File: file, Line: doc.Root.Line, Col: doc.Root.Column,
				Msg: fmt.Sprintf("more than %d problems in the policies; stopping here", maxErrors)})
			l.full = true
			return
		}
		var f File
		pos, derrs := strictyaml.Decode(doc, &f, strictyaml.DefaultLimits)
		l.errs = append(l.errs, derrs...)
		if len(derrs) > 0 {
			continue
		}
		fail := func(path, format string, args ...any) {
			p := pos.Lookup(path)
			l.errs = append(l.errs, &strictyaml.Error{File: file, Line: p.Line, Col: p.Col, Path: path, Msg: fmt.Sprintf(format, args...)})
		}
		l.set = append(l.set, l.build(&f, fail)...)
	}
}

// rule compiles one rule within the repo's limits; ok is false once past
// them (the error said so once, and no more rules are compiled).
func (l *loader) rule(name, expr string, sel Selector, path string, fail func(path, format string, args ...any)) (r *Rule, ok bool) {
	if l.full {
		return nil, false
	}
	if l.rules++; l.rules > RepoLimits.MaxRules {
		fail(path, "more than %d CEL rules in the policies; cairn loads at most that many", RepoLimits.MaxRules)
		l.full = true
		return nil, false
	}
	c, seen := l.compiled[expr]
	if !seen {
		c = compileExpr(expr)
		l.compiled[expr] = c
	}
	if c.err != nil {
		fail(path+".expression", "%v", c.err)
		return nil, true
	}
	if l.cost += c.cost; l.cost > RepoLimits.MaxCost {
		fail(path+".expression", "the rules together may cost up to %d on one step; the limit is %d", l.cost, RepoLimits.MaxCost)
		l.full = true
		return nil, false
	}
	return &Rule{name: name, program: c.program, now: l.now, selector: sel, cost: c.cost}, true
}

// bare drops the operation and path of a *fs.PathError, which the caller
// names already.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
