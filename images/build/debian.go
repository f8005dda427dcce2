package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A debPackage is one stanza of a Debian Packages index: what the
// resolver needs of it.
type debPackage struct {
	Name, Version string
	// Depends holds the Pre-Depends and Depends groups; each group is a
	// list of alternatives, each a package name without version or
	// architecture qualifier.
	Depends  [][]string
	Provides []string
}

// debIndex is the newest stanza of each package name over the suite's
// Packages files (the suite, its updates and its security updates).
type debIndex struct {
	pkgs      map[string]debPackage
	providers map[string][]string // virtual name -> real packages, sorted
}

// loadIndex reads every *_Packages file in an apt lists directory.
func loadIndex(dir string) (*debIndex, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_Packages"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Packages index in %s (apt-get update first)", dir)
	}
	ix := &debIndex{pkgs: map[string]debPackage{}, providers: map[string][]string{}}
	for _, f := range files {
		if err := ix.addFile(f); err != nil {
			return nil, err
		}
	}
	ix.index()
	return ix, nil
}

func (ix *debIndex) addFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	defer f.Close()
	pkgs, err := parsePackages(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	for _, p := range pkgs {
		ix.add(p)
	}
	return nil
}

// add keeps the newer of p and the stanza already held for its name.
func (ix *debIndex) add(p debPackage) {
	if old, ok := ix.pkgs[p.Name]; !ok || compareVersions(p.Version, old.Version) > 0 {
		ix.pkgs[p.Name] = p
	}
}

func (ix *debIndex) index() {
	ix.providers = map[string][]string{}
	for _, p := range ix.pkgs {
		for _, v := range p.Provides {
			ix.providers[v] = append(ix.providers[v], p.Name)
		}
	}
	for _, ps := range ix.providers {
		sort.Strings(ps)
	}
}

// parsePackages reads the stanzas of a Packages index.
func parsePackages(r io.Reader) ([]debPackage, error) {
	var out []debPackage
	var cur debPackage
	var field string
	flush := func() {
		if cur.Name != "" {
			out = append(out, cur)
		}
		cur, field = debPackage{}, ""
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // a continuation line (Description's): nothing the resolver reads
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("bad line %q", line)
		}
		field, v = k, strings.TrimSpace(v)
		switch field {
		case "Package":
			cur.Name = v
		case "Version":
			cur.Version = v
		case "Depends", "Pre-Depends":
			cur.Depends = append(cur.Depends, parseRelations(v)...)
		case "Provides":
			for _, g := range parseRelations(v) {
				cur.Provides = append(cur.Provides, g...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	return out, nil
}

// parseRelations parses "a (>= 1), b:any | c" into [[a] [b c]].
func parseRelations(s string) [][]string {
	var groups [][]string
	for _, g := range strings.Split(s, ",") {
		var alts []string
		for _, a := range strings.Split(g, "|") {
			a = strings.TrimSpace(a)
			if i := strings.IndexAny(a, " (["); i >= 0 {
				a = a[:i]
			}
			a, _, _ = strings.Cut(a, ":")
			if a != "" {
				alts = append(alts, a)
			}
		}
		if len(alts) > 0 {
			groups = append(groups, alts)
		}
	}
	return groups
}

// isLibrary reports whether the resolver follows a dependency on name:
// shared-library packages are what a program needs at run time; the rest
// of a package's Depends (debconf, adduser, perl and its modules,
// postgresql-common's wrappers) serve Debian's installation, not the
// programs an image runs.
func isLibrary(name string) bool {
	if name == "zlib1g" {
		return true
	}
	for _, s := range []string{"-dev", "-bin", "-perl", "-doc", "-utils"} {
		if strings.HasSuffix(name, s) {
			return false
		}
	}
	return strings.HasPrefix(name, "lib")
}

// resolve returns roots and the library packages they need, following
// Depends through library packages only, sorted by name. A group is
// satisfied by its first alternative that is a real package, else by the
// first package that provides it.
func (ix *debIndex) resolve(roots []string) ([]debPackage, error) {
	seen := map[string]bool{}
	var out []debPackage
	queue := append([]string(nil), roots...)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		p, ok := ix.pkgs[name]
		if !ok {
			return nil, fmt.Errorf("package %s is not in the index", name)
		}
		out = append(out, p)
		for _, g := range p.Depends {
			dep, err := ix.choose(g)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if dep != "" && isLibrary(dep) {
				queue = append(queue, dep)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// choose picks the package that satisfies a group; "" when none is a
// library and none exists (a dependency the resolver would not follow).
func (ix *debIndex) choose(group []string) (string, error) {
	for _, a := range group {
		if _, ok := ix.pkgs[a]; ok {
			return a, nil
		}
	}
	for _, a := range group {
		if ps := ix.providers[a]; len(ps) > 0 {
			return ps[0], nil
		}
	}
	for _, a := range group {
		if isLibrary(a) {
			return "", fmt.Errorf("no package satisfies %s", strings.Join(group, " | "))
		}
	}
	return "", nil
}
