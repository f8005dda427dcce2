package postgres

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A postmaster writes its PID into postmaster.pid and PostgreSQL refuses
// to start on a data directory whose postmaster.pid names a live process
// (kill(pid, 0) succeeds), other than itself or its parent. A container
// restarted after a crash has a PID namespace of its own, numbered from
// 1 again: the PID the last postmaster had is soon taken by the instance
// manager's own threads or children (kill succeeds on a thread's ID too),
// and the server, or the single-user recovery pg_rewind runs, refuses to
// start, again at every try. Seen on the real node: a crash-looped
// primary's rewind failed every 5 s with "lock file postmaster.pid already
// exists ... Is another postmaster (PID 14) running".
//
// The file is stale when the process it names runs but is no server on
// this data directory (a postmaster's working directory is its data
// directory, and its children's), and no other process has that
// directory as its working directory either: then the server that wrote
// it is gone with all its processes, and the file is removed before
// anything starts on the directory. When the named process does not
// exist, the file stays: PostgreSQL then checks itself, through the
// shared memory key the file holds, that no process of the old server is
// left, and starts. A process whose working directory this one may not
// read is another user's, and PostgreSQL runs only as the owner of its
// data directory, whom the instance manager runs as (or root): it is no
// server on this directory.

// lockFile is the name of the postmaster's lock file in a data directory.
const lockFile = "postmaster.pid"

// removeStaleLock removes dir's postmaster.pid when it is stale, as
// above, and says why it did ("" when it did not).
func removeStaleLock(dir string) (string, error) {
	path := filepath.Join(dir, lockFile)
	pid, ok, err := lockPID(dir)
	if err != nil || !ok {
		return "", err // no lock file, or one PostgreSQL tells itself
	}
	d, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if on, err := inDir(strconv.Itoa(pid), d); err != nil || on != reusedPID {
		return "", err
	}
	// The PID was taken by another process: is anything of the old
	// server left?
	procs, err := processes()
	if err != nil {
		return "", err
	}
	for _, proc := range procs {
		if on, err := inDir(proc, d); err != nil || on == serverOf {
			return "", err
		}
	}
	return fmt.Sprintf("process %d, which it names, is no server on this data directory, and none is", pid), removeLock(path)
}

// lockPID is the PID dir's postmaster.pid names (a single-user
// backend's, which it writes negated, made positive); ok is false when
// there is no lock file or its first line is no PID.
func lockPID(dir string) (pid int, ok bool, err error) {
	path := filepath.Join(dir, lockFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", path, err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err = strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid == 0 {
		return 0, false, nil
	}
	if pid < 0 {
		pid = -pid
	}
	return pid, true, nil
}

// where a process is, for a lock file.
type where int

const (
	gone      where = iota // no such process
	serverOf               // its working directory is the data directory
	reusedPID              // it runs elsewhere
)

// inDir says where process pid runs, against data directory d; one
// whose working directory this process may not read runs elsewhere.
func inDir(pid string, d fs.FileInfo) (where, error) {
	cwd, err := os.Stat(filepath.Join("/proc", pid, "cwd"))
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		return gone, nil
	case errors.Is(err, fs.ErrPermission):
		return reusedPID, nil
	case err != nil:
		return gone, fmt.Errorf("process %s: %w", pid, err)
	case os.SameFile(cwd, d):
		return serverOf, nil
	}
	return reusedPID, nil
}

func removeLock(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the stale %s: %w", path, err)
	}
	return nil
}
