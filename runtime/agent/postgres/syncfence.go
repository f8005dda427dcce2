package postgres

import (
	"fmt"
	"slices"
	"strings"
)

// The synchronous fence: failing over from a primary that does not
// answer without waiting for its lease.
//
// A primary that stops answering may be cut off and still running. With
// asynchronous replication nothing but its lease bounds how long it may
// acknowledge commits, so the runtime waits for the lease (stillWrites).
// With synchronous replication the runtime can take the old primary's
// ability to acknowledge away itself:
//
//   - The old primary acknowledges a commit (synchronous_commit on or
//     remote_apply) only once K of the standbys its
//     synchronous_standby_names lists (N of them) have flushed it, FIRST K
//     or ANY K alike.
//   - The runtime detaches standbys of that list: primary_conninfo is set
//     empty and the configuration reloaded, and a standby counts as
//     detached only once it answers that no WAL receiver runs. A detached
//     standby receives nothing more, so it acknowledges nothing more.
//   - Once D of the N are detached with N-D < K, no commit the old primary
//     takes from then on can be acknowledged, whatever it still does.
//   - Every commit acknowledged before was flushed by K of the N; since
//     D > N-K, one of them at least is detached: the most advanced
//     detached standby (the largest flushed WAL position) holds every
//     acknowledged commit. It is promoted.
//
// The runtime falls back to waiting for the lease when the argument does
// not hold or cannot be checked: asynchronous replication; no
// synchronous_standby_names recorded from the primary (none reported yet,
// the runtime was changing it when the primary stopped answering, or the
// primary is a failover's target, just promoted, that failed in turn); a
// list with "*" (any standby may acknowledge, by whatever name); fewer than
// N-K+1 of the listed standbys answer the runtime (they may be cut off
// with the old primary); or the most advanced detached standby may not be
// promoted and no other holds as much.
//
// The argument covers commits made with synchronous_commit on or
// remote_apply. A session that sets synchronous_commit to local or off
// is acknowledged without any standby, and is as exposed as with
// asynchronous replication; remote_write commits are covered unless a
// standby's operating system crashes as well.

// syncFence is the synchronous fence's next action for the failover f
// whose old primary does not answer: detach standbys, or promote the most
// advanced detached one. ok false, with why, when the fence cannot be
// used and the failover waits for the old primary's lease.
func syncFence(v pgView, f *pgFailover) (a pgAction, ok bool, why string) {
	if v.Sync <= 0 {
		return pgAction{}, false, "asynchronous replication"
	}
	if v.Status.SyncSetting == "" {
		return pgAction{}, false, "no synchronous_standby_names recorded from " + f.From
	}
	q, err := parseSyncNames(v.Status.SyncSetting)
	switch {
	case err != nil:
		return pgAction{}, false, err.Error()
	case q.K == 0:
		return pgAction{}, false, f.From + " waited for no synchronous standby"
	case q.Any:
		return pgAction{}, false, `its synchronous_standby_names lists "*"`
	}
	names := slices.Compact(slices.Sorted(slices.Values(q.Names)))
	names = slices.DeleteFunc(names, func(n string) bool { return n == f.From })
	need := len(names) - q.K + 1
	var detached, attached []pgMember
	for _, n := range names {
		m, listed := findMember(v.Members, n)
		switch {
		case listed && isDetached(f, m):
			detached = append(detached, m)
		case listed && m.replica():
			attached = append(attached, m)
		}
	}
	if len(detached) >= need {
		to, why := fenceTarget(detached)
		if to == "" {
			return pgAction{}, false, why
		}
		return pgAction{Kind: pgPromote, Member: f.From, To: to, Why: fmt.Sprintf(
			"%s: %d of its %d synchronous standbys are detached and it waits for %d, so it can acknowledge no commit; %s holds the most WAL of them",
			f.Reason, len(detached), len(names), q.K, to)}, true, ""
	}
	if len(detached)+len(attached) < need {
		return pgAction{}, false, fmt.Sprintf("%d of the %d standbys it may wait for answer, %d must be detached", len(detached)+len(attached), len(names), need)
	}
	var detach []string
	for _, m := range attached {
		detach = append(detach, m.Name)
	}
	return pgAction{Kind: pgDetach, Member: f.From, Detach: detach, Why: fmt.Sprintf(
		"%s does not answer: detaching %s so it can acknowledge no commit (it waits for %d of %d standbys)",
		f.From, strings.Join(detach, ", "), q.K, len(names))}, true, ""
}

// isDetached: the runtime detached m from the failover's old primary, and
// m answers as a replica with no primary_conninfo and no WAL receiver.
func isDetached(f *pgFailover, m pgMember) bool {
	_, ok := detachedRecord(f, m)
	return ok
}

// detachedRecord is the runtime's record of detaching m from the
// failover's old primary, while m answers as detached.
func detachedRecord(f *pgFailover, m pgMember) (pgDetached, bool) {
	i := slices.IndexFunc(f.Detached, func(d pgDetached) bool { return d.Member == m.Name })
	if i < 0 || !m.replica() || m.Probe.Upstream != "" || m.Probe.Receiving {
		return pgDetached{}, false
	}
	return f.Detached[i], true
}

// fenceTarget is the detached standby to promote: the one with the most
// WAL flushed, or one that may be promoted holding as much.
func fenceTarget(detached []pgMember) (string, string) {
	var most uint64
	for _, m := range detached {
		most = max(most, m.Probe.Received)
	}
	for _, m := range detached {
		if m.Probe.Received == most && !m.NoPromote {
			return m.Name, ""
		}
	}
	return "", fmt.Sprintf("the detached standby with the most WAL (%s) may not be promoted", formatLSN(most))
}

// detachedUpstream is the primary_conninfo member had before the runtime
// detached it, if it did.
func detachedUpstream(st pgStatus, member string) (string, bool) {
	if st.Failover == nil {
		return "", false
	}
	for _, d := range st.Failover.Detached {
		if d.Member == member {
			return d.Upstream, true
		}
	}
	return "", false
}
