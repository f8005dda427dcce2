package postgres

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// KillPostmaster kills a PostgreSQL server at once, as the crash of its
// container would: the postmaster and every process it started. Each
// child of a postmaster makes itself a session and process group leader
// (setsid), so a signal to the postmaster's process group reaches the
// postmaster alone, and its children go on until they notice it died:
// a backend in the middle of a commit may still answer its client. The
// postmaster is stopped first so it starts no more children, then each
// child's process group (its own children: an archive command's shell)
// and the postmaster are killed.
func KillPostmaster(pid int) { SignalServer(pid, syscall.SIGKILL) }

// SignalServer sends sig to a PostgreSQL server's postmaster and every
// process it started, each a process group of its own (KillPostmaster):
// SIGKILL kills the whole server, SIGSTOP freezes it as a hung host
// would, its open sessions and WAL senders too, and SIGCONT lets it all
// go on. For the first two the postmaster is stopped first, so it starts
// no child in between.
func SignalServer(pid int, sig syscall.Signal) {
	if sig == syscall.SIGKILL || sig == syscall.SIGSTOP {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	for _, c := range childrenOf(pid) {
		_ = syscall.Kill(-c, sig)
		_ = syscall.Kill(c, sig)
	}
	_ = syscall.Kill(-pid, sig)
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	procs, _ := processes()
	parent := strconv.Itoa(pid)
	var out []int
	for _, c := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", c, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and
		// parentheses, so the fields after it are read from the last ')'.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == parent {
			n, _ := strconv.Atoi(c)
			out = append(out, n)
		}
	}
	return out
}

// processes lists the IDs of the processes /proc shows.
func processes() ([]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
