package instance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{"bootstrap": "new\n", "tls": "require"} {
		_ = os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644)
	}
	c, err := ReadConfig(dir, nil)
	if err != nil || c != (Config{Bootstrap: "new", TLS: "require"}) {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := ReadConfig(t.TempDir(), nil); err != nil || c.Bootstrap != "existing" {
		t.Errorf("defaults: %+v %v", c, err)
	}
	_ = os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("maybe"), 0o644)
	if _, err := ReadConfig(dir, nil); err == nil || !strings.Contains(err.Error(), "must be new or existing") {
		t.Errorf("bad bootstrap: %v", err)
	}
}

func TestReadConfigRestore(t *testing.T) {
	dir := t.TempDir()
	write := func(k, v string) { _ = os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644) }
	write("restore.storage-location", "s3://backups/etcd")
	if _, err := ReadConfig(dir, nil); err == nil || !strings.Contains(err.Error(), "restore.cluster") {
		t.Errorf("no cluster: %v", err)
	}
	write("restore.cluster", "old")
	c, err := ReadConfig(dir, nil)
	if err != nil || c.Restore == nil || *c.Restore != (Restore{Location: "s3://backups/etcd", Cluster: "old", Backup: "latest"}) {
		t.Fatalf("%+v %v", c.Restore, err)
	}
	write("restore.backup", "20261130T020000Z-1a2b3c")
	if c, err := ReadConfig(dir, nil); err != nil || c.Restore.Backup != "20261130T020000Z-1a2b3c" {
		t.Fatalf("%+v %v", c.Restore, err)
	}
}
