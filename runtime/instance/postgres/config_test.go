package postgres

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/runtime/instance"
)

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{"bootstrap": "new\n", "synchronous-standbys": "1", "backup.storage-location": "s3://b/pg"} {
		_ = os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644)
	}
	c, err := ReadConfig(dir)
	if err != nil || c != (Config{Config: instance.Config{Bootstrap: "new"}, SynchronousStandbys: 1, ArchiveLocation: "s3://b/pg"}) {
		t.Fatalf("%+v %v", c, err)
	}
	_ = os.WriteFile(filepath.Join(dir, "synchronous-standbys"), []byte("one"), 0o644)
	if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "synchronous-standbys") {
		t.Errorf("bad synchronous-standbys: %v", err)
	}
}
