package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// cairn backup list shows a pinned backup's request; cairn backup release
// unpins it, once, and refuses what is not a backup.
func TestBackupRelease(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := &backup.FileStore{Root: dir}
	m, err := backup.Take(ctx, st, "kv", "EtcdCluster", srcFunc(func(w func([]byte) error, m *backup.Manifest) error {
		m.Source = "kv-0"
		return w([]byte("not a real snapshot"))
	}), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	// As the runtime does right after the backup a TakeBackup step asked for.
	if _, err := backup.Prune(ctx, st, "kv", backup.Retention{Count: 1, Request: "backup-before-3.5.21"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	loc := "file://" + dir
	for _, c := range []struct {
		name string
		args []string
		code int
		out  string // a substring of stdout, or of stderr when code is not exitOK
	}{
		{"list shows the pin", []string{"backup", "list", "kv", "--location", loc}, exitOK, "backup-before-3.5.21"},
		{"release", []string{"backup", "release", "kv", m.ID, "--location", loc}, exitOK, "released (taken for backup-before-3.5.21)"},
		{"list shows no pin", []string{"backup", "list", "kv", "--location", loc, "-o", "json"}, exitOK, `"request": "backup-before-3.5.21"`},
		{"release again: nothing to do", []string{"backup", "release", "kv", m.ID, "--location", loc}, exitOK, "is not pinned"},
		{"no such backup", []string{"backup", "release", "kv", "20261130T020000Z-000000", "--location", loc}, exitInvalid, "not found"},
		{"not a backup ID", []string{"backup", "release", "kv", "../other", "--location", loc}, exitUsage, "not a backup ID"},
		{"not a cluster name", []string{"backup", "release", "../kv", m.ID, "--location", loc}, exitUsage, "not valid"},
		{"no location", []string{"backup", "release", "kv", m.ID}, exitUsage, "location"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := cairn(t, c.args...)
			if c.code != exitOK {
				out = errOut
			}
			if code != c.code || !strings.Contains(out, c.out) {
				t.Fatalf("exit %d, want %d; out %q err %q; want %q", code, c.code, out, errOut, c.out)
			}
		})
	}
	all, err := backup.List(ctx, st, "kv")
	if err != nil || len(all) != 1 || all[0].Pinned {
		t.Fatalf("after the release: %+v %v", all, err)
	}
}
