package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// cairn backup list shows complete backups only; restore refuses what it
// cannot do before touching anything.
func TestBackupListAndRestoreErrors(t *testing.T) {
	dir := t.TempDir()
	st := &backup.FileStore{Root: dir}
	m, err := backup.Take(context.Background(), st, "kv", "EtcdCluster", srcFunc(func(w func([]byte) error, m *backup.Manifest) error {
		m.Source = "kv-0"
		return w([]byte("not a real snapshot"))
	}), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	// A cut-off backup: data without a manifest.
	_ = os.MkdirAll(filepath.Join(dir, "kv", "99990101T000000Z-000000"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "kv", "99990101T000000Z-000000", "data"), []byte("x"), 0o644)

	code, out, errOut := cairn(t, "backup", "list", "kv", "--location", "file://"+dir, "-o", "json")
	var got []backup.Manifest
	if code != exitOK || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 || got[0].ID != m.ID {
		t.Fatalf("list: exit %d %s %s", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"backup", "list", "../kv", "--location", "file://" + dir}, exitUsage, "not valid"},
		{[]string{"backup", "list", "kv", "--location", "gs://x/y"}, exitUsage, "want s3://"},
		{[]string{"restore", "--location", "file://" + dir, "--cluster", "kv", "--kind", "EtcdCluster", "--data-dir", t.TempDir()}, exitUsage, "--peer-url"},
		{[]string{"restore", "--location", "file://" + dir, "--cluster", "kv", "--kind", "PostgresCluster", "--data-dir", filepath.Join(t.TempDir(), "d")}, exitInvalid, "not a PostgresCluster"},
		{[]string{"restore", "--location", "file://" + dir, "--cluster", "kv", "--kind", "EtcdCluster", "--peer-url", "http://127.0.0.1:2380", "--data-dir", dir}, exitInvalid, "already exists"},
		{[]string{"restore", "--location", "file://" + dir, "--cluster", "other", "--kind", "EtcdCluster", "--peer-url", "http://127.0.0.1:2380", "--data-dir", filepath.Join(t.TempDir(), "d")}, exitInvalid, "no complete backup"},
		{[]string{"backup", "run", "kv"}, exitUsage, "give --kubeconfig or --in-cluster"},
	} {
		if code, _, errOut := cairn(t, c.args...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d %s", c.args, code, errOut)
		}
	}
}

type srcFunc func(w func([]byte) error, m *backup.Manifest) error

func (f srcFunc) Stream(_ context.Context, w io.Writer, m *backup.Manifest) error {
	return f(func(p []byte) error { _, err := w.Write(p); return err }, m)
}
