package version

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The test binary is a Go executable: on ELF systems its build ID names
// it, and a file that is not one names nothing.
func TestIdentityIsTheBuildID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the build ID is read from ELF executables")
	}
	id := Identity()
	if len(id) == 0 || string(id[:len("go-build-id:")]) != "go-build-id:" || len(id) < len("go-build-id:")+20 {
		t.Fatalf("Identity() = %q, want the executable's Go build ID", id)
	}
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := elfBuildID(notELF); got != nil {
		t.Errorf("a shell script's build ID: %q", got)
	}
}
