package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Temporary clones live in os.TempDir()/cairn-repo-*, each with a file
// naming the process that made it. A run that is killed cannot remove its
// clone; the next run removes every clone whose process is gone.
const (
	clonePattern = "cairn-repo-"
	clonePIDFile = "cairn.pid"
)

// makeCloneDir removes the clones of runs that are gone and makes this
// run's, recording its process.
func makeCloneDir() (string, error) {
	removeStaleClones(os.TempDir())
	dir, err := os.MkdirTemp("", clonePattern)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, clonePIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// removeStaleClones removes the clones in tmp whose process no longer
// runs. A clone without a readable process file may be a run starting
// now, and is left.
func removeStaleClones(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), clonePattern) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		data, err := os.ReadFile(filepath.Join(dir, clonePIDFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || processRuns(pid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// processRuns reports whether a process pid exists (signal 0 checks
// without sending). A process of another user counts as running.
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
