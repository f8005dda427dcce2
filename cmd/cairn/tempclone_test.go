package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A clone left by a killed run is removed by the next; one whose run is
// alive, or that has no process file yet, is kept.
func TestStaleClonesAreRemoved(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	clones := map[string]string{
		clonePattern + "dead":  strconv.Itoa(dead.Process.Pid),
		clonePattern + "alive": strconv.Itoa(os.Getpid()),
		clonePattern + "new":   "",
		"other-dead":           strconv.Itoa(dead.Process.Pid),
	}
	for name, pid := range clones {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
			t.Fatal(err)
		}
		if pid != "" {
			if err := os.WriteFile(filepath.Join(dir, clonePIDFile), []byte(pid+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	removeStaleClones(tmp)
	for name := range clones {
		_, err := os.Stat(filepath.Join(tmp, name))
		if gone := os.IsNotExist(err); gone != (name == clonePattern+"dead") {
			t.Errorf("%s: removed %v", name, gone)
		}
	}
}
