package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// decideCase is one pure decision: the view, and the action wanted.
type decideCase struct {
	name string
	v    pgView
	kind pgActionKind
	to   string
	why  string
	// node is the draining node a switchover begins for.
	node string
}

func runDecideCases(t *testing.T, t0 time.Time, cases []decideCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.v.Now, c.v.Settings = t0, FailoverSettings{}.withDefaults()
			a := decidePostgres(c.v)
			if a.Kind != c.kind || a.To != c.to || a.Node != c.node || !strings.Contains(a.Why, c.why) {
				t.Fatalf("got %s to %q node %q (%s), want %s to %q node %q (%s)", a.Kind, a.To, a.Node, a.Why, c.kind, c.to, c.node, c.why)
			}
		})
	}
}

func TestDecideDrain(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rep := func(name string, recv uint64) pgMember {
		return pgMember{Name: name, Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp, InRecovery: true, Streaming: true, Received: recv, Replayed: recv}}
	}
	notStreaming := func(m pgMember) pgMember { m.Probe.Streaming = false; return m }
	noPromote := func(m pgMember) pgMember { m.NoPromote = true; return m }
	prim := pgMember{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachUp, Received: 9, Replayed: 9}}
	drain := func(members ...string) map[string]string {
		out := map[string]string{}
		for _, m := range members {
			out[m] = "node-" + m
		}
		return out
	}
	runDecideCases(t, t0, []decideCase{
		{name: "no node draining: nothing", v: pgView{Members: []pgMember{prim, rep("b", 9)}}, kind: pgNone},
		{name: "a replica's node draining: nothing (the replica budget lets one go)", v: pgView{Draining: drain("b"), Members: []pgMember{prim, rep("b", 9), rep("c", 9)}},
			kind: pgNone},
		{name: "the primary's node draining: switch over to the most caught-up replica", v: pgView{Draining: drain("a"), Members: []pgMember{prim, rep("b", 7), rep("c", 8)}},
			kind: pgBeginSwitchover, to: "c", node: "node-a", why: "node node-a of the primary a is draining"},
		{name: "equals: the first by name", v: pgView{Draining: drain("a"), Members: []pgMember{prim, rep("c", 8), rep("b", 8)}},
			kind: pgBeginSwitchover, to: "b", node: "node-a"},
		{name: "never to a replica on a draining node", v: pgView{Draining: drain("a", "c"), Members: []pgMember{prim, rep("b", 7), rep("c", 9)}},
			kind: pgBeginSwitchover, to: "b", node: "node-a"},
		{name: "never to a no-promote or not streaming replica", v: pgView{Draining: drain("a"), Members: []pgMember{prim, noPromote(rep("b", 9)), notStreaming(rep("c", 9)), rep("d", 3)}},
			kind: pgBeginSwitchover, to: "d", node: "node-a"},
		{name: "one member: waits, says why", v: pgView{Draining: drain("a"), Members: []pgMember{prim}},
			kind: pgNone, why: "node node-a of the primary a is draining, but no switchover: no streaming replica"},
		{name: "no healthy replica: waits, says why", v: pgView{Draining: drain("a", "c"), Members: []pgMember{prim, notStreaming(rep("b", 9)), rep("c", 9),
			{Name: "d", Label: contract.RoleReplica, Probe: pgProbe{Reach: reachDown}}}},
			kind: pgNone, why: "PodDisruptionBudget holds its eviction"},
		{name: "after an abort: waits until the retry", v: pgView{Draining: drain("a"), Status: pgStatus{SwitchoverRetryAt: t0.Add(time.Second)}, Members: []pgMember{prim, rep("b", 9)}},
			kind: pgNone, why: "switching over again at"},
		{name: "labels are fixed first", v: pgView{Draining: drain("a"), Members: []pgMember{prim, {Name: "b", Probe: rep("b", 9).Probe}}},
			kind: pgLabel},
		{name: "a drain's switchover goes on as a merged one's: fence once caught up", v: pgView{Draining: drain("a"),
			Status:  pgStatus{Switchover: &pgSwitchover{Drain: "node-a", From: "a", To: "b", StartedAt: t0, LSN: 9}},
			Members: []pgMember{prim, rep("b", 9)}}, kind: pgSwitchFence, to: "b"},
		{name: "a drain's switchover: promote once the old primary stopped", v: pgView{Draining: drain("a"),
			Status:  pgStatus{Switchover: &pgSwitchover{Drain: "node-a", From: "a", To: "b", StartedAt: t0, LSN: 9, FencedAt: t0}},
			Members: []pgMember{{Name: "a", Label: contract.RoleFenced, Probe: pgProbe{Reach: reachDown}}, rep("b", 10)}},
			kind: pgPromote, to: "b", why: "switchover for the drain of node node-a"},
		{name: "the new primary's node is not draining: nothing more", v: pgView{Draining: drain("a"),
			Members: []pgMember{{Name: "a", Label: contract.RoleReplica, Probe: rep("a", 10).Probe}, {Name: "b", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachUp, Received: 10}}}},
			kind: pgNone},
		{name: "a merged request waits while a drain is served first", v: pgView{Draining: drain("a"), Switchover: pgRequest{ID: "s1", To: "c"},
			Members: []pgMember{prim, rep("b", 9), rep("c", 8)}}, kind: pgBeginSwitchover, to: "b", node: "node-a"},
	})
}
