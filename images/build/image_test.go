package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/cairn-dev/cairn/renderer"
)

// writeTree writes files (path -> content; a trailing "*" on a path makes
// it executable, "-> target" content a symlink) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The fake Debian roots: a few files where the real ones have thousands,
// and what the images must leave out (documentation, translations, the
// old major's JIT).
func fakeRoots(t *testing.T) (base, pg15, pg13 string) {
	base = writeTree(t, map[string]string{
		"usr/share/ca-certificates/mozilla/B.crt": "-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----",
		"usr/share/ca-certificates/mozilla/A.crt": "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n",
		"lib/x86_64-linux-gnu/libc.so.6":          "libc",
		"usr/share/doc/libc6/copyright":           "GPL",
		".debs":                                   "ca-certificates=20230311\nlibc6=2.36-9\n",
	})
	pg15 = writeTree(t, map[string]string{
		"usr/lib/postgresql/15/bin/postgres*":            "postgres 15",
		"usr/lib/postgresql/15/bin/pg_upgrade*":          "pg_upgrade 15",
		"usr/share/postgresql/15/postgres.bki":           "bki 15",
		"usr/share/locale/de/LC_MESSAGES/postgres-15.mo": "Übersetzung",
		"usr/share/doc/postgresql-15/copyright":          "PostgreSQL",
		"bin/dash*":                                      "dash",
		"bin/busybox*":                                   "busybox",
		"usr/lib/locale/C.utf8/LC_CTYPE":                 "ctype",
		"usr/share/ca-certificates/mozilla/A.crt":        "cert 15",
		".debs": "dash=0.5.12-2\npostgresql-15=15.4-0+deb12u1\n",
	})
	pg13 = writeTree(t, map[string]string{
		"usr/lib/postgresql/13/bin/postgres*":       "postgres 13",
		"usr/lib/postgresql/13/lib/plpgsql.so":      "plpgsql 13",
		"usr/lib/postgresql/13/lib/llvmjit.so":      "jit 13",
		"usr/lib/postgresql/13/lib/bitcode/x.bc":    "bitcode 13",
		"usr/share/postgresql/13/postgres.bki":      "bki 13",
		"usr/lib/x86_64-linux-gnu/libicuuc.so.67":   "-> libicuuc.so.67.1",
		"usr/lib/x86_64-linux-gnu/libicuuc.so.67.1": "icu 67",
		".debs": "postgresql-13=13.9-0+deb11u1\n",
	})
	return base, pg15, pg13
}

// A file of an image's flattened file system.
type imageFile struct {
	mode     int64 // chmod bits, with setuid, setgid, sticky
	uid, gid int
	content  string // a substring the content holds; "" checks nothing
	link     string
}

func TestImages(t *testing.T) {
	base, pg15, pg13 := fakeRoots(t)
	bin := writeTree(t, map[string]string{"cairn*": "static cairn", "etcd*": "static etcd"})
	pgEnv := []string{"PATH=" + basePath + ":/usr/lib/postgresql/15/bin", "LANG=C.UTF-8", "PG_MAJOR=15", "PG_VERSION=15.4-0+deb12u1", "PGDATA=/var/lib/postgresql/data"}
	pgFiles := map[string]imageFile{
		"usr/lib/postgresql/15/bin/postgres":   {mode: 0o755, content: "postgres 15"},
		"usr/share/postgresql/15/postgres.bki": {mode: 0o644},
		"usr/lib/locale/C.utf8/LC_CTYPE":       {mode: 0o644},
		"etc/passwd":                           {mode: 0o644, content: "postgres:x:999:999:postgres:/var/lib/postgresql:/bin/sh\n"},
		"etc/group":                            {mode: 0o644, content: "postgres:x:999:\n"},
		"var/lib/postgresql":                   {mode: 0o755, uid: 999, gid: 999},
		"var/lib/postgresql/data":              {mode: 0o777, uid: 999, gid: 999},
		"var/run/postgresql":                   {mode: 0o3777, uid: 999, gid: 999},
		"tmp":                                  {mode: 0o1777},
		"bin/sh":                               {mode: 0o777, link: "dash"},
		"bin/cp":                               {mode: 0o777, link: "busybox"},
		"etc/localtime":                        {mode: 0o777, link: "/usr/share/zoneinfo/Etc/UTC"},
		caBundle:                               {mode: 0o644, content: "cert 15\n"},
	}
	cases := []struct {
		name    string
		build   func() (imageSpec, error)
		tag     string
		config  v1.Config
		files   map[string]imageFile
		absent  []string
		nLayers int
	}{{
		name:   "cairn",
		build:  func() (imageSpec, error) { return cairnImage(filepath.Join(bin, "cairn"), base) },
		tag:    renderer.DefaultOptions.CairnImage,
		config: v1.Config{Entrypoint: []string{"/cairn"}, User: "65532:65532", Env: []string{"PATH=" + basePath}},
		files: map[string]imageFile{
			"cairn":      {mode: 0o755, content: "static cairn"},
			"etc/passwd": {mode: 0o644, content: "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
			caBundle:     {mode: 0o644, content: "A\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nB\n"},
			"tmp":        {mode: 0o1777},
		},
		absent:  []string{"lib/x86_64-linux-gnu/libc.so.6"},
		nLayers: 1,
	}, {
		name:  "etcd",
		build: func() (imageSpec, error) { return etcdImage(filepath.Join(bin, "etcd"), base, "3.5.21") },
		tag:   "quay.io/coreos/etcd:v3.5.21",
		config: v1.Config{Cmd: []string{"/usr/local/bin/etcd"}, Env: []string{"PATH=" + basePath}, WorkingDir: "/var/lib/etcd",
			ExposedPorts: map[string]struct{}{"2379/tcp": {}, "2380/tcp": {}}},
		files: map[string]imageFile{
			"usr/local/bin/etcd":             {mode: 0o755, content: "static etcd"},
			"lib/x86_64-linux-gnu/libc.so.6": {mode: 0o644},
			"var/lib/etcd":                   {mode: 0o755},
			caBundle:                         {mode: 0o644},
		},
		absent:  []string{"usr/share/doc", ".debs"},
		nLayers: 1,
	}, {
		name:  "postgres",
		build: func() (imageSpec, error) { return postgresImage(pg15) },
		tag:   "docker.io/library/postgres:15.4",
		config: v1.Config{Cmd: []string{"postgres"}, User: "999:999", Env: pgEnv, StopSignal: "SIGINT",
			Volumes: map[string]struct{}{"/var/lib/postgresql/data": {}}, ExposedPorts: map[string]struct{}{"5432/tcp": {}}},
		files:   pgFiles,
		absent:  []string{"usr/share/doc", "usr/share/locale", ".debs"},
		nLayers: 1,
	}, {
		name:  "pg_upgrade",
		build: func() (imageSpec, error) { return upgradeImage(pg13, pg15) },
		tag:   renderer.DefaultOptions.PostgresUpgradeImage(13, 15),
		config: v1.Config{Cmd: []string{"postgres"}, User: "999:999", Env: pgEnv, StopSignal: "SIGINT",
			Volumes: map[string]struct{}{"/var/lib/postgresql/data": {}}, ExposedPorts: map[string]struct{}{"5432/tcp": {}}},
		files: merge(pgFiles, map[string]imageFile{
			"usr/lib/postgresql/13/bin/postgres":   {mode: 0o755, content: "postgres 13"},
			"usr/lib/postgresql/13/lib/plpgsql.so": {mode: 0o644},
			"usr/share/postgresql/13/postgres.bki": {mode: 0o644, content: "bki 13"},
		}),
		// No ELF file in the fake tree needs libicuuc.so.67: none comes.
		absent:  []string{"usr/lib/postgresql/13/lib/llvmjit.so", "usr/lib/postgresql/13/lib/bitcode", "usr/lib/x86_64-linux-gnu/libicuuc.so.67"},
		nLayers: 2,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			archive := buildTwice(t, c.build)
			img, tag := loadArchive(t, archive)
			if tag != c.tag {
				t.Errorf("RepoTags = %q, want %q", tag, c.tag)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cf.Config, c.config) {
				t.Errorf("config =\n%+v\nwant\n%+v", cf.Config, c.config)
			}
			if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(time.Unix(0, 0)) {
				t.Errorf("config: %s/%s created %v, want linux/amd64 created at the epoch", cf.OS, cf.Architecture, cf.Created)
			}
			if ls, _ := img.Layers(); len(ls) != c.nLayers {
				t.Errorf("%d layers, want %d", len(ls), c.nLayers)
			}
			checkFiles(t, img, c.files, c.absent)
		})
	}
}

func merge(a, b map[string]imageFile) map[string]imageFile {
	out := map[string]imageFile{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// buildTwice writes the image twice and requires the same bytes.
func buildTwice(t *testing.T, build func() (imageSpec, error)) string {
	t.Helper()
	var archives [2]string
	for i := range archives {
		spec, err := build()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		archives[i] = filepath.Join(dir, "image.tar")
		if err := spec.write(archives[i], dir, time.Unix(0, 0).UTC()); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := os.ReadFile(archives[0])
	b, _ := os.ReadFile(archives[1])
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("two builds differ (%d and %d bytes)", len(a), len(b))
	}
	return archives[0]
}

func loadArchive(t *testing.T, archive string) (v1.Image, string) {
	t.Helper()
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 {
		t.Fatalf("manifest %+v: want one image, one tag", m)
	}
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	return img, m[0].RepoTags[0]
}

// checkFiles reads the image's flattened file system: every entry dated
// the epoch and unnamed owners, want's files as described, absent's
// paths (and all below them) missing.
func checkFiles(t *testing.T, img v1.Image, want map[string]imageFile, absent []string) {
	t.Helper()
	got := map[string]imageFile{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mtime %v, owner %q:%q; want the epoch, no names", name, h.ModTime, h.Uname, h.Gname)
		}
		b, _ := io.ReadAll(tr)
		got[name] = imageFile{mode: h.Mode, uid: h.Uid, gid: h.Gid, content: string(b), link: h.Linkname}
		for _, a := range absent {
			if name == a || strings.HasPrefix(name, a+"/") {
				t.Errorf("%s is in the image", name)
			}
		}
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: missing", name)
			continue
		}
		if g.mode != w.mode || g.uid != w.uid || g.gid != w.gid || g.link != w.link || !strings.Contains(g.content, w.content) {
			t.Errorf("%s = mode %o %d:%d link %q content %q; want mode %o %d:%d link %q content with %q",
				name, g.mode, g.uid, g.gid, g.link, g.content, w.mode, w.uid, w.gid, w.link, w.content)
		}
	}
}

func TestImageErrors(t *testing.T) {
	base, pg15, pg13 := fakeRoots(t)
	empty := t.TempDir()
	for _, c := range []struct {
		name  string
		build func() (imageSpec, error)
		err   string
	}{
		{"no certificates", func() (imageSpec, error) { return cairnImage(filepath.Join(pg15, "bin/dash"), empty) }, "no certificates"},
		{"no binary", func() (imageSpec, error) { return cairnImage(filepath.Join(empty, "cairn"), base) }, "no such file"},
		{"etcd version", func() (imageSpec, error) { return etcdImage(filepath.Join(pg15, "bin/dash"), base, "3.5") }, "etcd 3.5"},
		{"no postgres", func() (imageSpec, error) { return postgresImage(base) }, "want one usr/lib/postgresql/<major>/bin/postgres, found 0"},
		{"downgrade", func() (imageSpec, error) { return upgradeImage(pg15, pg13) }, "the old major must be older"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.build(); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
		})
	}
}

func TestReadRelease(t *testing.T) {
	_, pg15, pg13 := fakeRoots(t)
	for root, want := range map[string]pgRelease{
		pg15: {major: 15, debian: "15.4-0+deb12u1", number: "15.4"},
		pg13: {major: 13, debian: "13.9-0+deb11u1", number: "13.9"},
	} {
		got, err := readRelease(root)
		if err != nil || got != want {
			t.Errorf("readRelease = %+v, %v; want %+v", got, err, want)
		}
	}
}
