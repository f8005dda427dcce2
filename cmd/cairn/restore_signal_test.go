package main

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// The first SIGTERM or SIGINT stops cairn restore, wherever it is: the
// exit code says which signal, and nothing is left where the data
// directory goes (nor the temporary folder it was unpacked into), so no
// later restore or PostgreSQL start finds a copy it would trust. The
// signal is real: the test sends it to its own process, which cairn's
// handler takes, while the data is read (half-way) and once it is all
// read (before the copy is put in place, which was not checked).
func TestRestoreStopsAtTheFirstSignal(t *testing.T) {
	dir := t.TempDir()
	st := &backup.FileStore{Root: dir}
	m, err := backup.Take(context.Background(), st, "db", "PostgresCluster", srcFunc(func(w func([]byte) error, m *backup.Manifest) error {
		m.Source, m.Version = "db-0", "15.4"
		return w(baseBackupTar(t))
	}), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		sig  syscall.Signal
		at   int64 // bytes read when the signal comes; -1: at the end
	}{
		{"SIGTERM half-way", syscall.SIGTERM, m.Size / 2},
		{"SIGTERM at the end", syscall.SIGTERM, -1},
		{"SIGINT at the end", syscall.SIGINT, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			into := filepath.Join(parent, "pgdata")
			signalled := false
			t.Cleanup(func() { restoreStore = openLocation })
			restoreStore = func(location string) (backup.Store, error) {
				inner, err := openLocation(location)
				return signalStore{Store: inner, t: t, sig: tt.sig, at: tt.at, sent: &signalled}, err
			}
			code, out, errOut := cairn(t, "restore", "--location", "file://"+dir, "--cluster", "db", "--kind", "PostgresCluster", "--data-dir", into)
			if !signalled {
				t.Fatal("the restore ended before the signal was sent")
			}
			want := "cairn: interrupted by " + map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[tt.sig] + "\n"
			if code != exitSignal+int(tt.sig) || errOut != want || strings.Contains(out, "restored") {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errOut, exitSignal+int(tt.sig), want)
			}
			if left, _ := os.ReadDir(parent); len(left) != 0 {
				t.Errorf("a stopped restore left %v", left)
			}
		})
	}
	// Not stopped, the same restore completes.
	into := filepath.Join(t.TempDir(), "pgdata")
	if code, _, errOut := cairn(t, "restore", "--location", "file://"+dir, "--cluster", "db", "--kind", "PostgresCluster", "--data-dir", into); code != exitOK {
		t.Fatalf("restore: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(into, "global", "pg_control")); err != nil {
		t.Fatal(err)
	}
}

// baseBackupTar is a small base backup's tar: the files a restore checks
// for, and 1 MiB of relation data to read.
func baseBackupTar(t *testing.T) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range []struct{ name, body string }{
		{"PG_VERSION", "15\n"}, {"backup_label", "START WAL LOCATION: 0/2000028\n"}, {"global/", ""}, {"global/pg_control", "control"},
		{"base/", ""}, {"base/1/", ""}, {"base/1/1259", strings.Repeat("r", 1<<20)},
	} {
		h := &tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(len(e.body))}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag, h.Mode = tar.TypeDir, 0o700
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// signalStore sends sig to this process once at bytes of a backup's data
// have been read (-1: at its end), and lets the read go on only once
// cairn's handler has ended the command's context.
type signalStore struct {
	backup.Store
	t    *testing.T
	sig  syscall.Signal
	at   int64
	sent *bool
}

func (s signalStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := s.Store.Get(ctx, key)
	if err != nil || !strings.HasSuffix(key, "/data") {
		return r, err
	}
	sized, _ := r.(interface{ Size() int64 })
	return &signallingReader{ReadCloser: r, sized: sized, ctx: ctx, s: s}, nil
}

type signallingReader struct {
	io.ReadCloser
	sized interface{ Size() int64 }
	ctx   context.Context
	s     signalStore
	n     int64
}

func (r *signallingReader) Size() int64 { return r.sized.Size() }

func (r *signallingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n += int64(n)
	if !*r.s.sent && (r.s.at >= 0 && r.n >= r.s.at || r.s.at < 0 && err == io.EOF) {
		*r.s.sent = true
		if kerr := syscall.Kill(os.Getpid(), r.s.sig); kerr != nil {
			r.s.t.Fatal(kerr)
		}
		select {
		case <-r.ctx.Done():
		case <-time.After(time.Minute):
			// Not a timed assertion: a guard against a handler that
			// never ends the context.
			r.s.t.Error("cairn's signal handler did not end the restore's context")
		}
	}
	return n, err
}
