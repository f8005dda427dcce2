package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// A replica the catch-up watch (catchup.go) found unable to catch up is
// re-cloned from the primary, or, when it forked off the primary's
// timeline, rewound onto it first (pg_rewind copies only what differs),
// and re-cloned only if the rewind fails: the server is stopped, and the next Prepare
// clones into the .cloning folder beside the data directory while the old
// data stays in place, replacing it only once the clone is complete, by
// renames (swapIn), or, when the volume cannot hold both, removing it
// first. It is never done
// on a member that is not a standby, one labelled primary, or while no
// primary answers: then the old data is kept and the member starts from it
// as before. Re-clones are bounded: recloneLimit attempts in a row, each
// after a backoff that doubles, counted again from zero once the member
// has caught up for recloneQuiet.

// errReclone: the server was stopped to re-clone the member.
var errReclone = errors.New("stopped: the replica cannot catch up and is re-cloned")

// Bounds of re-clones.
const (
	defaultRecloneBackoff = time.Minute
	recloneBackoffMax     = 30 * time.Minute
	recloneLimit          = 5
	recloneQuiet          = 10 * time.Minute
)

// recloneState is a member's pending re-clone and its budget, shared by
// the catch-up watch and Prepare.
type recloneState struct {
	mu sync.Mutex
	// pending is set from a confirmed gap until Prepare takes it; why says
	// what the gap was, and rewind that a rewind is tried first.
	pending bool
	why     string
	rewind  bool
	// attempts are the re-clones in a row, the last one at last; spent
	// says the limit was reported, and waited that the backoff after
	// attempt waited was.
	attempts int
	last     time.Time
	spent    bool
	waited   int
}

// wait is how long the next re-clone must wait after the last one, and
// whether the limit is reached.
func (r *recloneState) wait(now time.Time, base time.Duration) (time.Duration, bool) {
	switch {
	case r.attempts == 0:
		return 0, false
	case r.attempts >= recloneLimit:
		return 0, true
	}
	backoff := min(base<<(r.attempts-1), recloneBackoffMax)
	return max(r.last.Add(backoff).Sub(now), 0), false
}

// caughtUp counts re-clones from zero again once the member has all of
// the primary's WAL recloneQuiet after the last one.
func (r *recloneState) caughtUp(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.attempts > 0 && now.Sub(r.last) >= recloneQuiet {
		r.attempts, r.spent, r.waited = 0, false, 0
	}
}

// take returns and clears the pending re-clone.
func (r *recloneState) take() (pending bool, why string, rewind bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pending, why, rewind = r.pending, r.why, r.rewind
	r.pending, r.why, r.rewind = false, "", false
	return pending, why, rewind
}

func (r *recloneState) isPending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending
}

// reclonePlanned marks the member for a re-clone (a rewind first, with
// rewind) when its budget allows and says whether it did.
func (p *Manager) reclonePlanned(primary, why string, rewind bool) bool {
	base := p.RecloneBackoff
	if base <= 0 {
		base = defaultRecloneBackoff
	}
	r := &p.rc
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	wait, spent := r.wait(now, base)
	switch {
	case spent && !r.spent:
		r.spent = true
		p.Log.Error("replica cannot catch up and its re-clones are spent: it runs from its old data until the pod restarts", "member", p.Name, "primary", primary, "attempts", r.attempts, "reason", why)
		return false
	case spent:
		return false
	case wait > 0 && r.waited == r.attempts:
		return false
	case wait > 0:
		r.waited = r.attempts
		p.Log.Info("replica cannot catch up: re-clone waits for its backoff", "member", p.Name, "primary", primary, "retry_in", wait.Round(time.Second).String(), "reason", why)
		return false
	}
	r.attempts++
	r.last, r.pending, r.why, r.rewind = now, true, why, rewind
	what := "re-clone from"
	if rewind {
		what = "rewind onto"
	}
	p.Log.Warn("replica cannot catch up: stopping it to "+what+" the primary", "member", p.Name, "primary", primary, "attempt", r.attempts, "limit", recloneLimit, "reason", why)
	return true
}

// prepareReclone re-clones the member from primary if a re-clone is
// pending and still right, and makes it follow primary either way. It
// reports false when none was pending.
func (p *Manager) prepareReclone(ctx context.Context, primary string) (bool, error) {
	pending, why, rewind := p.rc.take()
	if !pending {
		return false, nil
	}
	log := p.Log.With("member", p.Name, "reason", why)
	switch {
	case primary == "":
		log.Warn("re-clone called off: no primary answers; keeping the data")
		return false, nil
	case p.RoleLabel != nil && p.RoleLabel() == contract.RolePrimary:
		log.Warn("re-clone called off: the member is labelled primary; keeping the data")
		return false, nil
	}
	if rewind {
		start := time.Now()
		err := p.rewind(ctx, primary)
		if err == nil {
			log.Info("rewound onto the primary's timeline", "primary", primary, "took", time.Since(start).Round(time.Millisecond).String())
			return true, p.follow(primary)
		}
		log.Warn("rewind failed: re-cloning instead", "primary", primary, "err", err.Error())
	}
	keep, need, free, err := p.roomToKeep(ctx, primary)
	if err != nil {
		log.Warn("re-clone called off: the clone's size is unknown; keeping the data", "primary", primary, "err", err.Error())
		return false, nil
	}
	if !keep {
		log.Warn("re-clone: the volume cannot hold the old data beside the clone; removing the old data first", "need_bytes", need, "free_bytes", free)
		if err := removeData(p.PGData); err != nil {
			return true, fmt.Errorf("re-clone: remove the old data: %w", err)
		}
	}
	start := time.Now()
	if err := p.clone(ctx, primary); err != nil {
		if derr := p.discardPartialClone(); derr != nil {
			log.Warn("re-clone: cannot remove the partial clone", "err", derr.Error())
		}
		if !keep {
			return true, fmt.Errorf("re-clone: %w", err)
		}
		log.Error("re-clone failed: following with the old data", "primary", primary, "err", err.Error())
		return true, p.follow(primary)
	}
	log.Info("re-cloned from the primary", "primary", primary, "took", time.Since(start).Round(time.Millisecond).String())
	return true, nil
}

// roomToKeep says whether the volume can hold a clone of primary beside
// the old data: the primary's databases, a tenth more, and 64 MiB for the
// WAL streamed during the clone.
func (p *Manager) roomToKeep(ctx context.Context, primary string) (keep bool, need, free uint64, err error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := p.connect(cctx, primary)
	if err != nil {
		return false, 0, 0, err
	}
	defer c.Close(context.Background())
	var size int64
	if err := c.QueryRow(cctx, "SELECT sum(pg_database_size(oid))::bigint FROM pg_database").Scan(&size); err != nil {
		return false, 0, 0, fmt.Errorf("the primary's size: %w", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(strings.TrimRight(p.PGData, "/")), &st); err != nil {
		return false, 0, 0, fmt.Errorf("free space: %w", err)
	}
	need = uint64(size) + uint64(size)/10 + 64<<20
	free = st.Bavail * uint64(st.Bsize)
	return free >= need, need, free, nil
}

// removeData removes a data directory, PG_VERSION first: one whose
// removal a crash cut short never looks like data.
func removeData(dir string) error {
	if err := os.Remove(filepath.Join(dir, "PG_VERSION")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.RemoveAll(dir)
}
