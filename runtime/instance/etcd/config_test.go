package etcd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/runtime/instance"
)

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{"bootstrap": "new\n", "initial-members": "3", "initial-cluster-token": "e-1",
		"request.remove-member.member": "e-4"} {
		_ = os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644)
	}
	c, err := ReadConfig(dir)
	if err != nil || c != (Config{Config: instance.Config{Bootstrap: "new"}, InitialMembers: 3, Token: "e-1", RemoveMember: "e-4"}) {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := ReadConfig(t.TempDir()); err != nil || c.Bootstrap != "existing" {
		t.Errorf("defaults: %+v %v", c, err)
	}
	_ = os.WriteFile(filepath.Join(dir, "initial-members"), []byte("three"), 0o644)
	if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "initial-members") {
		t.Errorf("bad initial-members: %v", err)
	}
}
