package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/runtime/agent"
)

// A replica whose next WAL its primary no longer keeps (removed past
// wal_keep_size while the replica was down or slow; cairn uses no
// replication slots) cannot stream again. Its instance manager reads the
// WAL from the cluster's archive, or re-clones the member from the primary
// (runtime/instance/postgres/catchup.go); the runtime reports it: the status
// records the member and the position it needs, a Warning
// ReplicaWALRemoved Event says so once, a Normal ReplicaCaughtUp once it
// has its WAL again, and cairn_postgres_replica_wal_removed is 1 meanwhile.

// The Events of a replica behind its primary's WAL, on the StatefulSet.
const (
	ReasonReplicaWALRemoved = "ReplicaWALRemoved"
	ReasonReplicaCaughtUp   = "ReplicaCaughtUp"
)

// segmentNumber reads the last 16 hex digits of a segment's file name
// (its number's high and low halves) in segments of size; 0 when there is
// none.
func segmentNumber(tail string, size int64) uint64 {
	if len(tail) != 16 || size <= 0 {
		return 0
	}
	hi, err1 := strconv.ParseUint(tail[:8], 16, 32)
	lo, err2 := strconv.ParseUint(tail[8:], 16, 32)
	if err1 != nil || err2 != nil {
		return 0
	}
	return hi*(0x100000000/uint64(size)) + lo
}

// walRemoved says whether replica needs WAL primary no longer keeps, and
// from where (the start of the segment it reads next). How far a replica
// has WAL is the greater of its received and replayed positions, so a
// replica that receives but replays slowly is never counted.
func walRemoved(primary, replica pgMember) (from uint64, removed bool) {
	pp, rp := primary.Probe, replica.Probe
	if !replica.replica() || pp.OldestSegment == 0 || pp.SegmentSize <= 0 {
		return 0, false
	}
	have := max(rp.Received, rp.Replayed)
	if have >= pp.Received {
		return 0, false
	}
	size := uint64(pp.SegmentSize)
	need := have / size
	return need * size, need < pp.OldestSegment
}

// walRemovedStatus is the status's record of the replicas behind the
// primary's WAL: each member and the position it needs. A member that
// does not answer keeps its record (a re-clone stops its server); one
// that answers with its WAL, or is gone, loses it.
func walRemovedStatus(prev map[string]string, members []pgMember, primary pgMember) map[string]string {
	out := map[string]string{}
	for _, m := range members {
		if from, removed := walRemoved(primary, m); removed {
			out[m.Name] = formatLSN(from)
		} else if was, ok := prev[m.Name]; ok && m.Probe.Reach != reachUp {
			out[m.Name] = was
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// walRemovedEvents are the Events of the change from prev to cur (pure):
// a Warning for each member newly behind, or behind from another
// position; a Normal for each of members that has its WAL again (a member
// gone from the cluster has none).
func walRemovedEvents(prev, cur map[string]string, members []pgMember, primary pgMember) []agent.Event {
	var out []agent.Event
	oldest := formatLSN(primary.Probe.OldestSegment * uint64(max(primary.Probe.SegmentSize, 0)))
	for _, name := range slices.Sorted(maps.Keys(cur)) {
		if prev[name] == cur[name] {
			continue
		}
		out = append(out, agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonReplicaWALRemoved, Message: fmt.Sprintf(
			"%s needs WAL from %s, which the primary %s no longer keeps (it keeps WAL from %s on): it cannot stream; its instance manager reads the WAL from the cluster's archive if it is there, else re-clones it from the primary (see its log)",
			name, cur[name], primary.Name, oldest)})
	}
	for _, name := range slices.Sorted(maps.Keys(prev)) {
		_, behind := cur[name]
		if !behind && slices.ContainsFunc(members, func(m pgMember) bool { return m.Name == name }) {
			out = append(out, agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonReplicaCaughtUp, Message: fmt.Sprintf("%s has the WAL it needs again", name)})
		}
	}
	return out
}

// reportWALRemoved records the pass's replicas behind the primary's WAL
// in st and their Events.
func (p *pgPass) reportWALRemoved(ctx context.Context, prev pgStatus, st *pgStatus, primary pgMember) {
	st.WALRemoved = walRemovedStatus(prev.WALRemoved, p.view.Members, primary)
	p.r.Metrics.walRemoved(p.view.Members, st.WALRemoved)
	for _, ev := range walRemovedEvents(prev.WALRemoved, st.WALRemoved, p.view.Members, primary) {
		if err := agent.RecordClusterEvent(ctx, p.r.Client, p.r.Namespace, p.r.Cluster, p.r.clock(), ev); err != nil {
			p.r.logger().Warn("event not recorded", "reason", ev.Reason, "error", err.Error())
		}
	}
}
