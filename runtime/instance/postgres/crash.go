package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// A server that exits on its own (killed: an OOM kill, a crash that took
// the postmaster down) while its instance manager, node and volume are
// fine is restarted in place at once: Run prepares the member again (the
// same checks as at any start: a primary confirms its role label
// through the API server, a member another primary answers beside is
// rewound to follow it) and starts the server, whose crash recovery
// replays the local WAL. Nothing acknowledged is lost, and a primary
// keeps its role label, so the -rw Service sends writes to it again as
// soon as it accepts them. The restarted server carries
// contract.PostgresCrashRestartSetting, the time of the crash, so the
// runtime sees the recovery (and records it) when it next asks.
//
// Not in a synchronous cluster (restartVerdict says why). Only once in
// a row: a server that crashes again less than
// CrashLoopWindow (contract.PostgresCrashLoopWindow when 0) after it
// recovered in place is in a crash loop, and Run returns its error as before (the container exits,
// the pod's restart policy takes over, and the runtime fails over from a
// primary). The runtime, for its part, waits a bounded window for a
// recovery in place before failing over (runtime/agent/postgres).

// errCrashed: the server exited on its own after it had started.
type errCrashed struct {
	// err is how it exited; at when, and ready since when it had
	// accepted connections.
	err       error
	at, ready time.Time
}

func (e *errCrashed) Error() string { return fmt.Sprintf("postgres exited: %v", e.err) }

func (e *errCrashed) Unwrap() error { return e.err }

// restartVerdict says whether a server that crashed is restarted in
// place, and why not: recovered is the crash its own start recovered
// from (zero when it was started any other way), ready when it began to
// accept connections and crashed when it exited; window is the crash
// loop's, and sync the cluster's synchronous standbys.
//
// A synchronous cluster is not restarted in place: a failover loses no
// acknowledged commit either, and is the faster. Its standbys connect to
// a restarted primary again only after their wal_retrieve_retry_interval
// (5 s by default), and no commit is acknowledged until one has: measured
// side by side (docs/runtime.md), the first write after a recovery in
// place came 4.9 s after the kill (p50), after a failover 2.8 s.
func restartVerdict(recovered, ready, crashed time.Time, window time.Duration, sync int) (bool, string) {
	if sync > 0 {
		return false, "synchronous replication: a failover loses no acknowledged commit either, and is faster than the standbys' reconnecting to a server restarted in place"
	}
	if recovered.IsZero() {
		return true, ""
	}
	if up := crashed.Sub(ready); up < window {
		return false, fmt.Sprintf("it crashed again %s after it recovered in place from the crash at %s (a crash loop)",
			up.Round(time.Millisecond), contract.FormatCrashTime(recovered))
	}
	return true, ""
}

// restartInPlace decides on a crash (restartVerdict) and logs the
// decision; when it restarts, what is left of the dead server is killed
// first (killOrphans), and the next start carries the crash's time.
func (p *Manager) restartInPlace(ctx context.Context, c *errCrashed) bool {
	window := p.CrashLoopWindow
	if window <= 0 {
		window = contract.PostgresCrashLoopWindow
	}
	ok, why := restartVerdict(p.recovered, c.ready, c.at, window, p.Config.SynchronousStandbys)
	if !ok {
		p.Log.Error("postgres crashed: not restarting it in place", "member", p.Name, "err", c.err.Error(), "reason", why)
		return false
	}
	killed, err := p.killOrphans(ctx)
	if err != nil {
		p.Log.Error("postgres crashed: not restarting it in place", "member", p.Name, "err", c.err.Error(), "reason", err.Error())
		return false
	}
	p.Log.Warn("postgres crashed: restarting it in place (crash recovery)", "member", p.Name, "err", c.err.Error(),
		"up_for", c.at.Sub(c.ready).Round(time.Millisecond).String(), "leftover_processes_killed", killed)
	p.recovered = c.at
	return true
}

// orphanWait bounds the wait for the dead server's processes to exit
// once killed.
const orphanWait = 10 * time.Second

// killOrphans kills what is left of a server that died: a postmaster
// killed alone leaves its children running until they notice, and one
// of them still attached to the shared memory (stopped, or stuck in a
// system call) makes the restarted server refuse to start ("pre-existing
// shared memory block is still in use"). Every process whose working
// directory is the data directory is one of the dead server's (lock.go);
// they are killed, and waited for, orphanWait at most. It says how many
// it killed.
func (p *Manager) killOrphans(ctx context.Context) (int, error) {
	d, err := os.Stat(p.PGData)
	if err != nil {
		return 0, fmt.Errorf("the data directory: %w", err)
	}
	killed := 0
	deadline := time.Now().Add(orphanWait)
	for {
		procs, err := processes()
		if err != nil {
			return killed, err
		}
		left := 0
		for _, proc := range procs {
			if on, _ := inDir(proc, d); on != serverOf {
				continue
			}
			pid, _ := strconv.Atoi(proc)
			if pid == os.Getpid() {
				continue
			}
			left++
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if left == 0 {
			return killed, nil
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("%d process(es) of the crashed server on %s did not exit", left, p.PGData)
		}
		select {
		case <-ctx.Done():
			return killed, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// crashSettings are the restarted server's settings: the time of the
// crash it recovers from, or none.
func (p *Manager) crashSettings() map[string]string {
	if p.recovered.IsZero() {
		return nil
	}
	return map[string]string{contract.PostgresCrashRestartSetting: contract.FormatCrashTime(p.recovered)}
}
