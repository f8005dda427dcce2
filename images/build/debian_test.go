package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int // sign
	}{
		{"15.20-0+deb12u1", "15.20-0+deb12u1", 0},
		{"15.20-0+deb12u1", "15.8-0+deb12u1", 1},
		{"1:1.2.13.dfsg-1", "2.0-1", 1}, // the epoch first
		{"3.0.22-1~deb12u2", "3.0.22-1", -1},
		{"1.0~rc1", "1.0", -1},
		{"1.0", "1.0a", -1},
		{"1.0a", "1.0+", -1}, // letters before other marks
		{"2.36-9+deb12u14", "2.36-9+deb12u9", 1},
		{"0010", "9", 1},
		{"1.2", "1.2-0", 0},
	} {
		got := compareVersions(c.a, c.b)
		if sign(got) != c.want {
			t.Errorf("compareVersions(%q, %q) = %d, want sign %d", c.a, c.b, got, c.want)
		}
		if back := compareVersions(c.b, c.a); sign(back) != -c.want {
			t.Errorf("compareVersions(%q, %q) = %d, want sign %d", c.b, c.a, back, -c.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// A suite's main index and its security updates.
const (
	mainIndex = `Package: postgresql-15
Version: 15.8-0+deb12u1
Depends: libc6 (>= 2.34), libssl3 (>= 3.0.0), postgresql-common (>= 252), tzdata, libldap-2.5-0
Description: the server
 a continuation line: Depends: libnothing

Package: libc6
Version: 2.36-9
Depends: libgcc-s1

Package: libgcc-s1
Version: 12.2.0-14
Depends: gcc-12-base (= 12.2.0-14), libc6 (>= 2.35)

Package: gcc-12-base
Version: 12.2.0-14

Package: libssl3
Version: 3.0.11-1~deb12u2
Pre-Depends: libc6:any (>= 2.34)

Package: postgresql-common
Version: 252
Depends: perl, libjson-perl

Package: libjson-perl
Version: 4.10000-1
Depends: perl:any

Package: tzdata
Version: 2024a-0+deb12u1
Depends: debconf (>= 0.5) | debconf-2.0

Package: libldap-2.5-0
Version: 2.5.13
Depends: libsasl2-2 | libsasl2-dev, libgnutls-any

Package: libsasl2-2
Version: 2.1.28

Package: libgnutls30
Version: 3.7.9
Provides: libgnutls-any
`
	securityIndex = `Package: postgresql-15
Version: 15.20-0+deb12u1
Depends: libc6 (>= 2.34), libssl3 (>= 3.0.0), postgresql-common (>= 252), tzdata, libldap-2.5-0, libzstd1

Package: libssl3
Version: 3.0.10-1
Depends: libc6

Package: libzstd1
Version: 1.5.4
`
)

func writeIndex(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages":                   mainIndex,
		"deb.debian.org_debian-security_dists_bookworm-security_main_binary-amd64_Packages": securityIndex,
		"deb.debian.org_debian_dists_bookworm_InRelease":                                    "not an index",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestResolve(t *testing.T) {
	ix, err := loadIndex(writeIndex(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		roots []string
		want  []string
		err   string
	}{{
		// The newest stanza of each name (security's postgresql-15, main's
		// libssl3); library Depends followed, the rest (postgresql-common,
		// debconf, gcc-12-base) not; a virtual package by its provider.
		name:  "server",
		roots: []string{"postgresql-15", "tzdata"},
		want: []string{"libc6=2.36-9", "libgcc-s1=12.2.0-14", "libgnutls30=3.7.9", "libldap-2.5-0=2.5.13",
			"libsasl2-2=2.1.28", "libssl3=3.0.11-1~deb12u2", "libzstd1=1.5.4", "postgresql-15=15.20-0+deb12u1", "tzdata=2024a-0+deb12u1"},
	}, {
		name:  "a root that is not a library is taken as asked",
		roots: []string{"postgresql-common"},
		want:  []string{"postgresql-common=252"},
	}, {
		// The release before the newest: main's 15.8, with its own
		// Depends (no libzstd1); the libraries are still the newest.
		name:  "previous release",
		roots: []string{"postgresql-15@previous", "tzdata"},
		want: []string{"libc6=2.36-9", "libgcc-s1=12.2.0-14", "libgnutls30=3.7.9", "libldap-2.5-0=2.5.13",
			"libsasl2-2=2.1.28", "libssl3=3.0.11-1~deb12u2", "postgresql-15=15.8-0+deb12u1", "tzdata=2024a-0+deb12u1"},
	}, {
		name:  "no previous release",
		roots: []string{"libzstd1@previous"},
		err:   "package libzstd1: the index has no release older than 1.5.4 (only 1.5.4)",
	}, {
		name:  "previous of a library",
		roots: []string{"libssl3@previous"},
		want:  []string{"libc6=2.36-9", "libgcc-s1=12.2.0-14", "libssl3=3.0.10-1"},
	}, {
		name:  "unknown root",
		roots: []string{"postgresql-99"},
		err:   "package postgresql-99 is not in the index",
	}, {
		name:  "unknown previous root",
		roots: []string{"postgresql-99@previous"},
		err:   "package postgresql-99 is not in the index",
	}} {
		t.Run(c.name, func(t *testing.T) {
			pkgs, err := ix.resolve(c.roots)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range pkgs {
				got = append(got, p.Name+"="+p.Version)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("resolve(%v) =\n%v\nwant\n%v", c.roots, got, c.want)
			}
		})
	}
}

func TestResolveMissingLibrary(t *testing.T) {
	ix := &debIndex{pkgs: map[string]debPackage{}}
	ix.add(debPackage{Name: "postgresql-15", Version: "15.1", Depends: [][]string{{"libmissing1", "libother1"}}})
	ix.index()
	if _, err := ix.resolve([]string{"postgresql-15"}); err == nil || !strings.Contains(err.Error(), "no package satisfies libmissing1 | libother1") {
		t.Fatalf("err = %v, want a group no package satisfies", err)
	}
}

// Two Debian revisions of one upstream release are not two releases.
func TestResolvePreviousSkipsRevisions(t *testing.T) {
	ix := &debIndex{pkgs: map[string]debPackage{}}
	for _, v := range []string{"15.20-0+deb12u1", "15.18-0+deb12u1", "15.20-0+deb12u2", "15.18-0+deb12u2"} {
		ix.add(debPackage{Name: "postgresql-15", Version: v})
	}
	ix.index()
	pkgs, err := ix.resolve([]string{"postgresql-15@previous"})
	if err != nil || len(pkgs) != 1 || pkgs[0].Version != "15.18-0+deb12u2" {
		t.Fatalf("resolve = %v, %v; want 15.18-0+deb12u2", pkgs, err)
	}
	ix = &debIndex{pkgs: map[string]debPackage{}}
	ix.add(debPackage{Name: "postgresql-15", Version: "15.20-0+deb12u1"})
	ix.add(debPackage{Name: "postgresql-15", Version: "15.20-0+deb12u2"})
	ix.index()
	if _, err := ix.resolve([]string{"postgresql-15@previous"}); err == nil || !strings.Contains(err.Error(), "no release older than 15.20") {
		t.Fatalf("err = %v, want no older release", err)
	}
}

func TestLoadIndexEmpty(t *testing.T) {
	if _, err := loadIndex(t.TempDir()); err == nil || !strings.Contains(err.Error(), "apt-get update first") {
		t.Fatalf("err = %v, want no index", err)
	}
}

func TestParseRelations(t *testing.T) {
	got := parseRelations("libc6 (>= 2.34), libssl3:any | libssl-any [amd64], debconf (>= 0.5) | debconf-2.0")
	want := [][]string{{"libc6"}, {"libssl3", "libssl-any"}, {"debconf", "debconf-2.0"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseRelations = %v, want %v", got, want)
	}
}
