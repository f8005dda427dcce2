package etcd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
)

// The rendered space quota reaches etcd as --quota-backend-bytes; without
// it etcd keeps its default.
func TestEtcdSpaceQuotaFlag(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, contract.KeyEtcdQuotaBackendBytes), []byte("4194304\n"), 0o644)
	c, err := ReadConfig(dir)
	if err != nil || c.SpaceQuota != 4<<20 {
		t.Fatalf("%+v %v", c, err)
	}
	url := func(m string) string { return "http://" + m }
	e := &Manager{Name: "e-0", Config: c, PeerURL: url, ClientURL: url}
	if args := e.baseArgs(); !slices.Contains(args, "--quota-backend-bytes") || args[slices.Index(args, "--quota-backend-bytes")+1] != "4194304" {
		t.Errorf("args %v", args)
	}
	e.Config.SpaceQuota = 0
	if args := e.baseArgs(); slices.Contains(args, "--quota-backend-bytes") {
		t.Errorf("args without a quota %v", args)
	}
	for _, bad := range []string{"4Mi", "0", "-1"} {
		_ = os.WriteFile(filepath.Join(dir, contract.KeyEtcdQuotaBackendBytes), []byte(bad), 0o644)
		if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "number of bytes") {
			t.Errorf("quota %q: %v", bad, err)
		}
	}
}
