package postgres

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRoleLabelFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "labels")
	_ = os.WriteFile(p, []byte("app.kubernetes.io/name=\"postgresql\"\ncairn.dev/role=\"fenced\"\n"), 0o644)
	if got := RoleLabelFile(p)(); got != "fenced" {
		t.Errorf("role = %q", got)
	}
	if got := RoleLabelFile(filepath.Join(t.TempDir(), "none"))(); got != "" {
		t.Errorf("missing file: %q", got)
	}
}
