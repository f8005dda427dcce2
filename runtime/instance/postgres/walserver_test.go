package postgres

import (
	"context"
	byteorder "encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/wal"
)

// The WAL server archives only files of its own pg_wal under their own
// names, fetches into a restore's pg_wal during a restore and into its
// own otherwise (a standby's restore_command), and answers a missing file
// as PostgreSQL expects.
func TestWALServerChecksEachRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pgdata := t.TempDir()
	for _, d := range []string{"global", "pg_wal"} {
		if err := os.MkdirAll(filepath.Join(pgdata, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	control := make([]byte, 32)
	byteorder.NativeEndian.PutUint64(control, 42)
	if err := os.WriteFile(filepath.Join(pgdata, "global", "pg_control"), control, 0o600); err != nil {
		t.Fatal(err)
	}
	seg := "000000010000000000000003"
	damaged := "000000010000000000000005.partial"
	if err := os.WriteFile(filepath.Join(pgdata, "pg_wal", seg), []byte("wal"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := &backup.FileStore{Root: t.TempDir()}
	if _, err := st.Put(ctx, backup.WALPrefix("db", 42)+damaged+".gz", strings.NewReader("not gzip")); err != nil {
		t.Fatal(err)
	}
	s := &WALServer{Socket: filepath.Join(t.TempDir(), "wal.sock"), PGData: pgdata, Log: slog.New(slog.DiscardHandler),
		Archive: func(system uint64) (backup.WALArchive, error) {
			return backup.WALArchive{Store: st, Cluster: "db", System: system}, nil
		}}
	ready := make(chan error, 1)
	go func() { _ = s.Serve(ctx, ready) }()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.Socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi, err)
	}
	call := func(op, name, path string) (int, string) {
		code, err := wal.Client(ctx, s.Socket, op, name, path)
		if err != nil {
			return code, err.Error()
		}
		return code, ""
	}
	outside := filepath.Join(t.TempDir(), seg)
	_ = os.WriteFile(outside, []byte("not ours"), 0o600)
	restoreDir := t.TempDir()
	_ = os.MkdirAll(filepath.Join(restoreDir, "pg_wal"), 0o700)
	for _, c := range []struct {
		op, name, path string
		code           int
		err            string
	}{
		{wal.OpPush, seg, filepath.Join(pgdata, "pg_wal", seg), 0, ""},
		{wal.OpPush, seg, outside, wal.ExitPushFailed, "is not " + filepath.Join(pgdata, "pg_wal", seg)},
		{wal.OpPush, "../../etc/passwd", filepath.Join(pgdata, "pg_wal", seg), wal.ExitPushFailed, "is not the name of a WAL"},
		// No restore under way: a standby's fetch from its own system's
		// archive, into its own pg_wal only.
		{wal.OpFetch, seg, filepath.Join(restoreDir, "pg_wal", "RECOVERYXLOG"), wal.ExitFailed, "outside the pg_wal of " + pgdata},
		{wal.OpFetch, seg, filepath.Join(pgdata, "pg_wal", "RECOVERYXLOG"), 0, ""},
		{wal.OpFetch, "000000010000000000000004", filepath.Join(pgdata, "pg_wal", "RECOVERYXLOG"), wal.ExitMissing, ""},
		{wal.OpFetch, "00000002.history", filepath.Join(pgdata, "pg_wal", "RECOVERYHISTORY"), wal.ExitMissing, ""},
		// A damaged copy stops no standby: it goes on streaming.
		{wal.OpFetch, damaged, filepath.Join(pgdata, "pg_wal", "RECOVERYXLOG"), wal.ExitMissing, ""},
		{"delete", seg, outside, wal.ExitFailed, "neither push nor fetch"},
	} {
		code, msg := call(c.op, c.name, c.path)
		if code != c.code || !strings.Contains(msg, c.err) {
			t.Errorf("%s %s %s: exit %d %q, want %d %q", c.op, c.name, c.path, code, msg, c.code, c.err)
		}
	}
	path, err := backup.PlanRecovery(ctx, st, backup.Manifest{ID: "b", Cluster: "db",
		Postgres: &backup.PostgresDetail{EndLSN: "0/3000100", Timeline: 1, SystemID: "42"}}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	done := s.Recover(restoreDir, &path)
	defer done()
	for _, c := range []struct {
		name, path string
		code       int
		err        string
	}{
		{seg, filepath.Join(restoreDir, "pg_wal", "RECOVERYXLOG"), 0, ""},
		{"000000010000000000000004", filepath.Join(restoreDir, "pg_wal", "RECOVERYXLOG"), wal.ExitMissing, ""},
		{"00000002.history", filepath.Join(restoreDir, "pg_wal", "RECOVERYHISTORY"), wal.ExitMissing, ""},
		{seg, filepath.Join(pgdata, "pg_wal", "RECOVERYXLOG"), wal.ExitFailed, "outside the pg_wal"},
	} {
		code, msg := call(wal.OpFetch, c.name, c.path)
		if code != c.code || !strings.Contains(msg, c.err) {
			t.Errorf("fetch %s to %s: exit %d %q, want %d %q", c.name, c.path, code, msg, c.code, c.err)
		}
	}
	for _, dir := range []string{restoreDir, pgdata} {
		if got, _ := os.ReadFile(filepath.Join(dir, "pg_wal", "RECOVERYXLOG")); string(got) != "wal" {
			t.Errorf("fetched %q into %s", got, dir)
		}
	}
	// A cluster that archives no WAL gives its standbys nothing to fetch.
	done()
	s = &WALServer{Socket: filepath.Join(t.TempDir(), "wal.sock"), PGData: pgdata, Log: slog.New(slog.DiscardHandler)}
	go func() { _ = s.Serve(ctx, ready) }()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	if code, msg := call(wal.OpFetch, seg, filepath.Join(pgdata, "pg_wal", "RECOVERYXLOG")); code != wal.ExitFailed || !strings.Contains(msg, "archives no WAL") {
		t.Errorf("fetch without an archive: exit %d %q", code, msg)
	}
}
