package backup

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/testbed"
)

// tarSource is a Source whose backup is a tar of entries, as a cluster's
// owner could craft one in cairn's own format.
type tarSource []tarEntry

type tarEntry struct {
	name, body string
	typ        byte
}

func (s tarSource) Stream(_ context.Context, w io.Writer, m *Manifest) error {
	m.Source, m.Version = "db-0", "15.4"
	tw := tar.NewWriter(w)
	for _, e := range s {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o600, Size: int64(len(e.body))}
		switch e.typ {
		case tar.TypeDir:
			h.Mode, h.Size = 0o700, 0
		case tar.TypeSymlink:
			h.Linkname, h.Size = e.body, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Size > 0 {
			if _, err := io.WriteString(tw, e.body); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func dir(name string) tarEntry        { return tarEntry{name: name, typ: tar.TypeDir} }
func file(name, body string) tarEntry { return tarEntry{name: name, body: body, typ: tar.TypeReg} }
func symlink(name, target string) tarEntry {
	return tarEntry{name: name, body: target, typ: tar.TypeSymlink}
}
func dataDir(extra ...tarEntry) tarSource {
	return append(tarSource{
		dir("./"), file("PG_VERSION", "15\n"), file("backup_label", "START WAL LOCATION: 0/2000028\n"),
		dir("global"), file("global/pg_control", "control"), dir("base"), dir("base/1"), file("base/1/1259", "rel"),
		dir("pg_wal"), file("pg_wal/000000010000000000000002", "wal"), dir("pg_xact"), file("pg_xact/0000", "x"),
	}, extra...)
}

// A backup is data only: its configuration files, and anything outside
// PostgreSQL's data layout, are left out and named, and the
// configuration files are written afresh, holding none of the backup's
// settings.
func TestRestoreKeepsOnlyTheDataLayout(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name        string
		src         tarSource
		wantDropped []string
		wantErr     string
	}{
		{"a plain base backup", dataDir(file("tablespace_map", "")), nil, ""},
		{"settings and code", dataDir(
			file("postgresql.auto.conf", "archive_mode = on\narchive_command = 'sh -c evil'\nshared_preload_libraries = 'evil'\n"),
			file("postgresql.conf", "include 'evil.conf'\n"), file("evil.conf", "archive_command = 'sh'\n"),
			file("pg_hba.conf", "host all all 0.0.0.0/0 trust\n"), file("pg_ident.conf", "m root postgres\n"),
			file("evil.so", "\x7fELF"), dir("lib"), file("lib/evil.so", "\x7fELF"), symlink("link", "/etc"),
			file("postmaster.opts", "/usr/lib/postgresql/15/bin/postgres"),
		), []string{"postgresql.auto.conf", "postgresql.conf", "evil.conf", "pg_hba.conf", "pg_ident.conf", "evil.so", "lib", "lib/evil.so", "link", "postmaster.opts"}, ""},
		{"config files only", dataDir(
			file("postgresql.auto.conf", "archive_command = 'sh -c evil'\n"), file("pg_hba.conf", "host all all 0.0.0.0/0 trust\n"), file("evil.so", "x"),
		), []string{"postgresql.auto.conf", "pg_hba.conf", "evil.so"}, ""},
		{"a tablespace map", dataDir(file("tablespace_map", "16384 /etc\n")), nil, "maps tablespaces"},
		{"a path under a data file", dataDir(file("PG_VERSION/x", "x")), []string{"PG_VERSION/x"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &FileStore{Root: t.TempDir()}
			m, err := Take(ctx, st, "db", spec.PostgresKind, tt.src, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			into := filepath.Join(t.TempDir(), "pgdata")
			r, err := RestorePostgres(ctx, st, m, PostgresRestore{DataDir: into})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("restore: %v, want an error saying %q", err, tt.wantErr)
				}
				if _, err := os.Stat(into); !os.IsNotExist(err) {
					t.Errorf("a refused restore left %s", into)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.Dropped, tt.wantDropped) {
				t.Errorf("dropped %q, want %q", r.Dropped, tt.wantDropped)
			}
			var got []string
			if err := filepath.WalkDir(into, func(p string, d os.DirEntry, err error) error {
				rel, _ := filepath.Rel(into, p)
				if err == nil && rel != "." {
					got = append(got, rel)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			want := []string{"PG_VERSION", "backup_label", "base", "base/1", "base/1/1259", "global", "global/pg_control",
				"pg_hba.conf", "pg_ident.conf", "pg_wal", "pg_wal/000000010000000000000002", "pg_xact", "pg_xact/0000", "postgresql.auto.conf", "postgresql.conf"}
			if tt.name == "a plain base backup" {
				want = append(want, "tablespace_map")
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("restored %q, want %q", got, want)
			}
			for _, f := range restoredConfig {
				b, err := os.ReadFile(filepath.Join(into, f.name))
				if err != nil || string(b) != f.content {
					t.Errorf("%s: %q, %v; want cairn's", f.name, b, err)
				}
			}
		})
	}
}

// The data layout is PostgreSQL's: every folder listed is one initdb
// makes, in PostgreSQL 13 and 15, and everything initdb makes is either
// listed or a configuration file the restore writes afresh.
func TestDataLayoutIsPostgres(t *testing.T) {
	for _, major := range []int{13, 15} {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			bin := testbed.PostgresBinFor(t, major)
			// Not t.TempDir: the postgres user must reach it.
			home, err := os.MkdirTemp("", "cairn-layout-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(home) })
			cred := testbed.PostgresCredential(t, home)
			data := filepath.Join(home, "pgdata")
			cmd := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("initdb: %v: %s", err, out)
			}
			entries, err := os.ReadDir(data)
			if err != nil {
				t.Fatal(err)
			}
			var folders, files []string
			for _, e := range entries {
				if e.IsDir() {
					folders = append(folders, e.Name())
				} else {
					files = append(files, e.Name())
				}
			}
			if !slices.Equal(folders, pgDataFolders) {
				t.Errorf("PostgreSQL %d's initdb makes the folders %q; the restore keeps %q", major, folders, pgDataFolders)
			}
			var config []string
			for _, f := range restoredConfig {
				config = append(config, f.name)
			}
			for _, f := range files {
				if !slices.Contains(pgDataFiles, f) && !slices.Contains(config, f) {
					t.Errorf("PostgreSQL %d's initdb makes %s, which the restore neither keeps nor writes", major, f)
				}
			}
			if !slices.Contains(files, "PG_VERSION") {
				t.Errorf("no PG_VERSION in %q", files)
			}
		})
	}
}
