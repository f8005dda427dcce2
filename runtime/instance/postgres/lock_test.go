package postgres

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A lock file is removed only when the process it names runs elsewhere
// and nothing runs in the data directory; otherwise PostgreSQL decides.
func TestRemoveStaleLock(t *testing.T) {
	gonePID := func(t *testing.T) int {
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		return cmd.Process.Pid
	}
	cases := []struct {
		name string
		// lock is the file's first line, from the data directory; ""
		// writes no file.
		lock    func(t *testing.T, dir string) string
		removed bool
	}{
		{"no lock file", func(*testing.T, string) string { return "" }, false},
		{"its process is gone: PostgreSQL checks the shared memory itself", func(t *testing.T, _ string) string { return strconv.Itoa(gonePID(t)) }, false},
		{"its PID taken by a process elsewhere", func(t *testing.T, _ string) string { return strconv.Itoa(sleeper(t, t.TempDir(), nil)) }, true},
		{"a single-user backend's, its PID taken elsewhere", func(t *testing.T, _ string) string { return "-" + strconv.Itoa(sleeper(t, t.TempDir(), nil)) }, true},
		{"its PID taken elsewhere, but a process runs in the data directory", func(t *testing.T, dir string) string {
			sleeper(t, dir, nil)
			return strconv.Itoa(sleeper(t, t.TempDir(), nil))
		}, false},
		{"a server on the data directory", func(t *testing.T, dir string) string { return strconv.Itoa(sleeper(t, dir, nil)) }, false},
		{"a PID this process is (its working directory elsewhere)", func(*testing.T, string) string { return strconv.Itoa(os.Getpid()) }, true},
		{"no PID", func(*testing.T, string) string { return "garbage" }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			first := c.lock(t, dir)
			path := filepath.Join(dir, lockFile)
			if first != "" {
				if err := os.WriteFile(path, []byte(first+"\n"+dir+"\n1700000000\n5432\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			why, err := removeStaleLock(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(path)
			gone := errors.Is(statErr, fs.ErrNotExist)
			if first != "" && gone != c.removed {
				t.Errorf("lock file %q: removed %v, want %v (%q)", first, gone, c.removed, why)
			}
			if (why != "") != (c.removed && first != "") {
				t.Errorf("reason %q, removed %v", why, gone)
			}
		})
	}
}

// sleeper starts a process with working directory dir, as cred (nil:
// this process's user), and returns its PID; it is killed when the test
// ends.
func sleeper(t *testing.T, dir string, cred *syscall.Credential) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.Dir = dir
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}
