package etcd

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

func TestDecideDrain(t *testing.T) {
	leader := func(m *memberView) { m.Leader = true }
	on := func(node string, cordoned bool) func(*memberView) {
		return func(m *memberView) { m.Node, m.Cordoned = node, cordoned }
	}
	at := func(applied uint64) func(*memberView) { return func(m *memberView) { m.Applied = applied } }
	down := func(m *memberView) { m.Healthy = false }
	learner := func(m *memberView) { m.Learner = true }
	mem := func(id uint64, name string, fs ...func(*memberView)) memberView {
		m := voter(id, name)
		for _, f := range fs {
			f(&m)
		}
		return m
	}
	// e-0 leads on the cordoned node a; e-1 and e-2 run on b and c.
	drained := mem(1, "e-0", leader, on("a", true))
	e1, e2 := mem(2, "e-1", on("b", false), at(90)), mem(3, "e-2", on("c", false), at(120))
	tests := []struct {
		name   string
		v      view
		kind   actionKind
		member string
		to     string
		why    string // part of the reason
	}{
		{"no node cordoned: nothing", view{CanMoveLeader: true, Members: members(mem(1, "e-0", leader, on("a", false)), e1, e2)}, actNone, "", "", ""},
		{"nodes not known: nothing", view{CanMoveLeader: true, Members: members(with(voter(1, "e-0"), leader), voter(2, "e-1"), voter(3, "e-2"))}, actNone, "", "", ""},
		{"a follower's node cordoned: nothing (the budget lets one member go)", view{CanMoveLeader: true, Members: members(mem(1, "e-0", leader, on("a", false)), mem(2, "e-1", on("b", true)), e2)},
			actNone, "", "", ""},
		{"the leader's node cordoned: to the most caught-up voter on an uncordoned node", view{CanMoveLeader: true, Members: members(drained, e1, e2)},
			actMoveLeader, "e-0", "e-2", "node a of the leader e-0 is cordoned"},
		{"equals: the first by name", view{CanMoveLeader: true, Members: members(drained, mem(3, "e-2", on("c", false)), mem(2, "e-1", on("b", false)))},
			actMoveLeader, "e-0", "e-1", "cordoned"},
		{"never to a voter on a cordoned node, however far ahead", view{CanMoveLeader: true, Members: members(drained, e1, mem(3, "e-2", on("c", true), at(500)))},
			actMoveLeader, "e-0", "e-1", ""},
		{"never to a voter on the same cordoned node", view{CanMoveLeader: true, Members: members(drained, e1, mem(3, "e-2", on("a", true), at(500)))},
			actMoveLeader, "e-0", "e-1", ""},
		{"never to a voter whose node is not known", view{CanMoveLeader: true, Members: members(drained, e1, mem(3, "e-2", at(500)))},
			actMoveLeader, "e-0", "e-1", ""},
		{"every other node cordoned: stays, says why", view{CanMoveLeader: true, Members: members(drained, mem(2, "e-1", on("b", true)), mem(3, "e-2", on("c", true)))},
			actNone, "", "", "node a of the leader e-0 is cordoned, but leadership stays: no other healthy voter runs on a node that is not cordoned"},
		{"one member: stays, says why", view{CanMoveLeader: true, Members: members(drained)}, actNone, "", "", "no other healthy voter"},
		{"a voter down: stays (the cluster is not healthy)", view{CanMoveLeader: true, Members: members(drained, e1, e2, mem(4, "e-3", on("d", false), down), mem(5, "e-4", on("e", false)))},
			actNone, "", "", "not healthy (4 of 5 voters healthy)"},
		{"a learner not promoted yet: stays (a membership change in flight)", view{CanMoveLeader: true,
			Members: members(drained, e1, e2, mem(4, "e-3", on("d", false), learner, func(m *memberView) { m.PodProblem = "its pod is not ready" }))},
			actNone, "", "", "learner e-3 not promoted"},
		{"a learner not started yet: stays", view{CanMoveLeader: true, Members: members(drained, e1, e2, memberView{ID: 0xa, Learner: true})},
			actNone, "", "", "learner id a not promoted"},
		{"a ready learner: promoted first", view{CanMoveLeader: true, Members: members(drained, e1, e2, mem(4, "e-3", on("d", false), learner))},
			actPromote, "e-3", "", ""},
		{"a member being replaced: stays", view{CanMoveLeader: true, Replacing: []string{"e-3"}, Members: members(drained, e1, e2)},
			actNone, "", "", "e-3 being replaced"},
		{"a requested removal of another member goes first", view{CanMoveLeader: true, Remove: removeRequest{"etcd-remove-2", "e-2"}, Members: members(drained, e1, e2)},
			actRemove, "e-2", "", "etcd-remove-2"},
		{"a requested removal of the leader moves it by the removal's rule", view{CanMoveLeader: true, Remove: removeRequest{"etcd-remove-0", "e-0"}, Members: members(drained, e1, mem(3, "e-2", on("c", true), at(500)))},
			actMoveLeader, "e-0", "e-2", "etcd-remove-0"},
		{"etcd before 3.3: stays, says why", view{Members: members(drained, e1, e2)}, actNone, "", "", "before 3.3"},
		{"quorum lost: nothing", view{CanMoveLeader: true, Members: members(drained, with(e1, down), with(e2, down))}, actNone, "", "", "quorum is lost"},
		{"the new leader's node is not cordoned: nothing more", view{CanMoveLeader: true, Members: members(mem(1, "e-0", on("a", true)), e1, with(e2, leader))},
			actNone, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := decide(tc.v)
			if a.Kind != tc.kind || a.Member.Name != tc.member || a.To.Name != tc.to || !strings.Contains(a.Why, tc.why) {
				t.Fatalf("got %s %q to %q (%s), want %s %q to %q (%s)", a.Kind, a.Member.Name, a.To.Name, a.Why, tc.kind, tc.member, tc.to, tc.why)
			}
			if tc.why == "" && tc.kind == actNone && a.Why != "" {
				t.Fatalf("waits for %q, want nothing pending", a.Why)
			}
		})
	}
}

// A leadership move off a cordoned node is recorded in the status (kept
// on later passes), its message and one LeaderMoved Event, all saying
// why; a wait is only the message.
func TestLeaderMoveReported(t *testing.T) {
	now := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	seen := etcdLook{listed: true, members: []lookedMember{{id: 1, name: "e-0", answered: true, noErrors: true, following: true},
		{id: 2, name: "e-1", answered: true, noErrors: true, following: true, leads: true}}}
	prev := &etcdStatus{Quorum: true, Members: []etcdMember{{ID: "1", Name: "e-0"}, {ID: "2", Name: "e-1"}}}
	move := action{Kind: actMoveLeader, Member: memberView{Name: "e-0"}, To: memberView{Name: "e-1"}, Why: "node a of the leader e-0 is cordoned"}
	st := nextStatus(prev, seen, nil, removeRequest{}, move, true, now)
	want := contract.EtcdLeaderMove{From: "e-0", To: "e-1", At: "2026-12-07T06:00:00Z", Reason: "node a of the leader e-0 is cordoned"}
	if st.LastLeaderMove == nil || *st.LastLeaderMove != want || st.Message != "moved leadership from e-0 to e-1: node a of the leader e-0 is cordoned" {
		t.Fatalf("status %+v, last move %+v", st, st.LastLeaderMove)
	}
	evs := events(prev, st, seen, move, true)
	if len(evs) != 1 || evs[0].Reason != ReasonLeaderMoved || !strings.Contains(evs[0].Message, "node a of the leader e-0 is cordoned") {
		t.Fatalf("events %+v", evs)
	}
	next := nextStatus(&st, seen, nil, removeRequest{}, action{}, false, now.Add(time.Minute))
	if next.LastLeaderMove == nil || *next.LastLeaderMove != want || next.Message != "" || len(events(&st, next, seen, action{}, false)) != 0 {
		t.Fatalf("the pass after: status %+v, last move %+v", next, next.LastLeaderMove)
	}
	wait := action{Why: "node a of the leader e-1 is cordoned, but leadership stays: no other healthy voter runs on a node that is not cordoned"}
	waiting := nextStatus(&next, seen, nil, removeRequest{}, wait, false, now.Add(2*time.Minute))
	if waiting.Message != wait.Why || *waiting.LastLeaderMove != want || len(events(&next, waiting, seen, wait, false)) != 0 {
		t.Fatalf("a wait: status %+v", waiting)
	}
}
