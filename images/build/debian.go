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
// Packages files (the suite, its updates and its security updates), and
// every version each name has there.
type debIndex struct {
	pkgs      map[string]debPackage
	versions  map[string][]debPackage // name -> every stanza, newest first once indexed
	providers map[string][]string     // virtual name -> real packages, sorted
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
	ix := &debIndex{pkgs: map[string]debPackage{}, versions: map[string][]debPackage{}, providers: map[string][]string{}}
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

// add keeps the newer of p and the stanza already held for its name,
// and p among the name's versions.
func (ix *debIndex) add(p debPackage) {
	if ix.versions == nil {
		ix.versions = map[string][]debPackage{}
	}
	ix.versions[p.Name] = append(ix.versions[p.Name], p)
	if old, ok := ix.pkgs[p.Name]; !ok || compareVersions(p.Version, old.Version) > 0 {
		ix.pkgs[p.Name] = p
	}
}

func (ix *debIndex) index() {
	for _, vs := range ix.versions {
		sort.SliceStable(vs, func(i, j int) bool { return compareVersions(vs[i].Version, vs[j].Version) > 0 })
	}
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

// previousSuffix marks a root taken at its previous upstream release:
// "postgresql-15@previous" is the newest postgresql-15 whose upstream
// version is older than the newest one's (15.18 while the security
// updates carry 15.20), for an image a minor upgrade starts from.
const previousSuffix = "@previous"

// resolve returns roots and the library packages they need, following
// Depends through library packages only, sorted by name. A group is
// satisfied by its first alternative that is a real package, else by the
// first package that provides it. A root may be NAME@previous.
func (ix *debIndex) resolve(roots []string) ([]debPackage, error) {
	seen := map[string]bool{}
	var out []debPackage
	queue := append([]string(nil), roots...)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		p, err := ix.lookup(name)
		if err != nil {
			return nil, err
		}
		if seen[p.Name] {
			continue
		}
		seen[p.Name] = true
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

// lookup is the stanza a root or dependency names: the newest, or for
// NAME@previous the newest of an older upstream release.
func (ix *debIndex) lookup(name string) (debPackage, error) {
	base, previous := strings.CutSuffix(name, previousSuffix)
	p, ok := ix.pkgs[base]
	if !ok {
		return p, fmt.Errorf("package %s is not in the index", base)
	}
	if !previous {
		return p, nil
	}
	_, newest, _ := splitVersion(p.Version)
	for _, v := range ix.versions[base] {
		if _, up, _ := splitVersion(v.Version); compareParts(up, newest) < 0 {
			return v, nil
		}
	}
	return p, fmt.Errorf("package %s: the index has no release older than %s (only %s)", base, newest, p.Version)
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
