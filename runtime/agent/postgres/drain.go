package postgres

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// drainSwitchover: the primary's node is cordoned (a drain begins so),
// and its eviction waits for the primary's PodDisruptionBudget
// (renderer/disruption.go). The runtime switches over to the most
// caught-up streaming replica on a schedulable node, with the merged
// step's switchover machinery (the primary read-only, the target replays
// all of its WAL, then the old primary is fenced and the target
// promoted); the old primary, no longer labelled primary, is then
// evicted like any replica. ok is false when the primary's node is not
// draining.
//
// With no replica to take over, it waits and says why (the status
// message): the budget holds the eviction until a replica can take over,
// or the drain's own timeout ends it (docs/runtime.md, "Drains").
func drainSwitchover(v pgView, p pgMember) (pgAction, bool) {
	node, draining := v.Draining[p.Name]
	if !draining {
		return pgAction{}, false
	}
	if v.Now.Before(v.Status.SwitchoverRetryAt) {
		return pgWait("node %s of the primary %s is draining: switching over again at %s", node, p.Name, v.Status.SwitchoverRetryAt.Format(time.RFC3339)), true
	}
	to, why := drainTarget(v, p.Name)
	if to == "" {
		return pgWait("node %s of the primary %s is draining, but no switchover: %s; its PodDisruptionBudget holds its eviction until a replica can take over (docs/runtime.md, Drains)",
			node, p.Name, why), true
	}
	return pgAction{Kind: pgBeginSwitchover, Member: p.Name, To: to, Node: node, Why: fmt.Sprintf("node %s of the primary %s is draining", node, p.Name)}, true
}

// drainTarget is the replica a drain switches over to: streaming, not
// no-promote, on a node that is not draining, the one that received the
// most WAL (the first by name among equals). "" and why when there is
// none. Synchronous replication needs no rule of its own: a switchover
// promotes only once the target replayed all of the read-only primary's
// WAL.
func drainTarget(v pgView, from string) (string, string) {
	var cands []pgMember
	for _, m := range v.Members {
		if _, draining := v.Draining[m.Name]; m.Name != from && m.replica() && m.Probe.Streaming && !m.NoPromote && !draining {
			cands = append(cands, m)
		}
	}
	if len(cands) == 0 {
		return "", "no streaming replica that may be promoted runs on a schedulable node"
	}
	slices.SortStableFunc(cands, func(a, b pgMember) int {
		if c := cmp.Compare(b.Probe.Received, a.Probe.Received); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return cands[0].Name, ""
}

// what names a switchover in messages: its merged step's ID, or the
// drain that started it.
func (s *pgSwitchover) what() string {
	if s.Drain != "" {
		return "for the drain of node " + s.Drain
	}
	return s.ID
}
