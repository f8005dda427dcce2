package etcd

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func voter(id uint64, name string) memberView {
	return memberView{ID: id, Name: name, Healthy: true, Applied: 100, Revision: 50}
}

func members(ms ...memberView) []memberView { return ms }

func with(m memberView, f func(*memberView)) memberView { f(&m); return m }

func TestDecide(t *testing.T) {
	leader := func(m *memberView) { m.Leader = true }
	down := func(m *memberView) { m.Healthy = false }
	learner := func(m *memberView) { m.Learner = true }
	replaced := func(m *memberView) { m.ClaimReplaced = true; m.Healthy = false }
	e0, e1, e2 := with(voter(1, "e-0"), leader), voter(2, "e-1"), voter(3, "e-2")
	tests := []struct {
		name   string
		v      view
		kind   actionKind
		member string
		to     string
		why    string // part of the reason
	}{
		{"healthy, nothing to do", view{Members: members(e0, e1, e2)}, actNone, "", "", ""},
		{"a ready learner is promoted", view{Members: members(e0, e1, e2, with(voter(4, "e-3"), learner))}, actPromote, "e-3", "", ""},
		{"one learner per pass", view{Members: members(e0, e1, e2, with(voter(4, "e-3"), learner), with(voter(5, "e-4"), learner))}, actPromote, "e-3", "", ""},
		{"a learner whose pod is not ready waits", view{Members: members(e0, e1, e2, with(voter(4, "e-3"), func(m *memberView) { m.Learner, m.PodProblem = true, "its pod is not ready" }))}, actNone, "", "", "not ready"},
		{"a learner not started yet waits", view{Members: members(e0, e1, e2, memberView{ID: 4, Learner: true})}, actNone, "", "", ""},
		{"a learner that does not answer waits", view{Members: members(e0, e1, e2, with(voter(4, "e-3"), func(m *memberView) { learner(m); down(m) }))}, actNone, "", "", "does not answer"},
		{"removal of a follower", view{Members: members(e0, e1, e2), Remove: removeRequest{"etcd-remove-2", "e-2"}}, actRemove, "e-2", "", "etcd-remove-2"},
		{"a leader hands over first, to the voter furthest ahead",
			view{Members: members(with(voter(1, "e-0"), func(m *memberView) { m.Applied = 90 }), with(voter(2, "e-1"), func(m *memberView) { m.Applied = 120 }), with(e2, leader)),
				CanMoveLeader: true, Remove: removeRequest{"etcd-remove-2", "e-2"}}, actMoveLeader, "e-2", "e-1", "leads"},
		{"a down voter takes no leadership",
			view{Members: members(with(voter(1, "e-0"), func(m *memberView) { m.Applied = 200; down(m) }), voter(2, "e-1"), voter(4, "e-3"), with(voter(5, "e-4"), leader)),
				CanMoveLeader: true, Remove: removeRequest{"etcd-remove-4", "e-4"}}, actMoveLeader, "e-4", "e-1", ""},
		{"etcd before 3.3 removes the leader directly", view{Members: members(e1, e2, with(voter(5, "e-4"), leader)), Remove: removeRequest{"etcd-remove-4", "e-4"}}, actRemove, "e-4", "", ""},
		{"a done removal is no removal", view{Members: members(e0, e1), Remove: removeRequest{"etcd-remove-2", "e-2"}}, actNone, "", "", ""},
		{"no removal below quorum", view{Members: members(e0, with(e1, down), e2), Remove: removeRequest{"etcd-remove-2", "e-2"}}, actNone, "", "", "quorum"},
		{"a member that is only down (or emptied by hand) is left alone", view{Members: members(e0, e1, with(e2, down))}, actNone, "", "", ""},
		{"a replaced claim: removed", view{Members: members(e0, e1, with(e2, replaced))}, actRemove, "e-2", "", "claim"},
		{"a replaced claim of a member that answers: left alone", view{Members: members(e0, e1, with(e2, func(m *memberView) { m.ClaimReplaced = true }))}, actNone, "", "", ""},
		{"a replacement with another voter down keeps quorum", view{Members: members(with(voter(1, "e-0"), leader), voter(2, "e-1"), voter(3, "e-2"), with(voter(4, "e-3"), down), with(voter(5, "e-4"), replaced))},
			actRemove, "e-4", "", ""},
		{"a replaced learner is removed", view{Members: members(e0, e1, e2, with(voter(4, "e-3"), func(m *memberView) { learner(m); replaced(m) }))}, actRemove, "e-3", "", ""},
		{"replacement before promotion", view{Members: members(e0, e1, with(e2, replaced), with(voter(4, "e-3"), learner))}, actRemove, "e-2", "", ""},
		{"quorum lost: nothing", view{Members: members(e0, with(e1, down), with(e2, down)), Remove: removeRequest{"etcd-remove-2", "e-2"}}, actNone, "", "", "quorum is lost (1 of 3"},
		{"quorum lost with a replaced claim: nothing", view{Members: members(with(e0, down), with(e1, down), with(e2, replaced))}, actNone, "", "", "quorum is lost (0 of 3"},
		{"no members known: nothing", view{}, actNone, "", "", "quorum is lost (0 of 0"},
		{"a stray learner is removed", view{Members: members(e0, e1, e2, with(voter(4, "e-3"), func(m *memberView) {
			learner(m)
			m.Stray, m.PodProblem = true, "its pod is not one the StatefulSet keeps"
		}))},
			actRemove, "e-3", "", "does not keep"},
		{"a stray learner that does not answer is removed too", view{Members: members(e0, e1, e2, with(voter(4, "e-3"), func(m *memberView) { learner(m); down(m); m.Stray = true }))},
			actRemove, "e-3", "", "does not keep"},
		{"a requested removal goes before a stray learner", view{Members: members(e0, e1, e2, with(voter(4, "e-3"), func(m *memberView) { learner(m); m.Stray = true })), Remove: removeRequest{"etcd-remove-2", "e-2"}},
			actRemove, "e-2", "", "etcd-remove-2"},
		{"no stray removal without quorum", view{Members: members(e0, with(e1, down), with(e2, down), with(voter(4, "e-3"), func(m *memberView) { learner(m); m.Stray = true }))},
			actNone, "", "", "quorum is lost"},
		{"a learner does not count for quorum", view{Members: members(e0, with(e1, down), with(e2, down), with(voter(4, "e-3"), learner))}, actNone, "", "", "quorum is lost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := decide(tc.v)
			if a.Kind != tc.kind || a.Member.Name != tc.member || a.To.Name != tc.to || !strings.Contains(a.Why, tc.why) {
				t.Fatalf("got %s %q to %q (%s), want %s %q to %q (%s)", a.Kind, a.Member.Name, a.To.Name, a.Why, tc.kind, tc.member, tc.to, tc.why)
			}
			if tc.kind == actRemove && !tc.v.safeWithout(a.Member) {
				t.Fatalf("%s removed below quorum", a.Member.Name)
			}
		})
	}
}

// Whatever members are down, no removal decided leaves fewer healthy
// voters than a quorum.
func TestDecideNeverBelowQuorum(t *testing.T) {
	for mask := range 1 << 5 {
		var ms []memberView
		for i := range 5 {
			m := voter(uint64(i+1), "e-"+string(rune('0'+i)))
			m.Healthy = mask&(1<<i) != 0
			m.ClaimReplaced = i == 4
			ms = append(ms, m)
		}
		v := view{Members: ms, Remove: removeRequest{"etcd-remove-3", "e-3"}}
		a := decide(v)
		if a.Kind == actRemove && !v.safeWithout(a.Member) {
			t.Errorf("mask %05b: %s removed below quorum", mask, a.Member.Name)
		}
	}
}

func TestNextStatus(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	look := func(healthy ...bool) etcdLook {
		l := etcdLook{listed: true, clusterVersion: "3.7"}
		for i, h := range healthy {
			l.members = append(l.members, lookedMember{id: uint64(i + 1), name: "e-" + string(rune('0'+i)), clientURLs: []string{"x"},
				answered: h, noErrors: true, following: h, leads: h && i == 0, version: "3.7.3", revision: 9})
		}
		return l
	}
	claims := map[string]string{"e-0": "a", "e-1": "b", "e-2": "c-new"}
	prev := &etcdStatus{Quorum: true, Members: []etcdMember{{ID: "1", ClaimUID: "a"}, {ID: "2"}, {ID: "3", ClaimUID: "c"}}}
	st := nextStatus(prev, look(true, true, true), claims, removeRequest{}, action{}, false, now)
	if !st.Quorum || st.Members[0].ClaimUID != "a" || st.Members[1].ClaimUID != "b" || st.Members[2].ClaimUID != "c" || !st.Members[0].Leader {
		t.Fatalf("claims are recorded once per member ID: %+v", st)
	}
	lost := nextStatus(&st, look(true, false, false), claims, removeRequest{}, action{Why: "quorum is lost"}, false, now)
	if lost.Quorum || lost.Members[0].Healthy || lost.Members[0].Leader || lost.QuorumLostAt == "" || len(lost.Members) != 3 {
		t.Fatalf("without quorum no member is healthy or leads: %+v", lost)
	}
	if evs := events(&st, lost, look(true, false, false), action{}, false); len(evs) != 1 || evs[0].Reason != ReasonQuorumLost {
		t.Fatalf("events %+v", evs)
	}
	still := nextStatus(&lost, look(true, false, false), claims, removeRequest{}, action{}, false, now.Add(time.Minute))
	if still.QuorumLostAt != lost.QuorumLostAt || len(events(&lost, still, etcdLook{listed: true}, action{}, false)) != 0 {
		t.Fatalf("quorum lost is reported once: %+v", still)
	}
	back := nextStatus(&still, look(true, true, true), claims, removeRequest{}, action{}, false, now)
	if evs := events(&still, back, look(true, true, true), action{}, false); len(evs) != 1 || evs[0].Reason != ReasonQuorumRestored {
		t.Fatalf("events %+v", evs)
	}
	// A cluster being created has never had quorum: no event.
	creating := nextStatus(nil, look(false, false, false), nil, removeRequest{}, action{}, false, now)
	if evs := events(&creating, nextStatus(&creating, look(false, false, false), nil, removeRequest{}, action{}, false, now), look(false, false, false), action{}, false); len(evs) != 0 {
		t.Fatalf("events while created: %+v", evs)
	}
	// A replaced member is "replacing" until a member of its name is back.
	gone := look(true, true)
	rep := nextStatus(&st, gone, claims, removeRequest{}, action{Kind: actRemove, Replace: true, Member: memberView{Name: "e-2"}}, true, now)
	if len(rep.Replacing) != 1 || rep.Replacing[0] != "e-2" {
		t.Fatalf("replacing %v", rep.Replacing)
	}
	if again := nextStatus(&rep, look(true, true, true), claims, removeRequest{}, action{}, false, now); len(again.Replacing) != 0 {
		t.Fatalf("replacing %v after it rejoined", again.Replacing)
	}
	// A remove request is done once its member is gone.
	if done := nextStatus(&st, gone, claims, removeRequest{"etcd-remove-2", "e-2"}, action{}, false, now); done.RemoveDone != "etcd-remove-2" {
		t.Fatalf("remove done %q", done.RemoveDone)
	}
	// The revision with quorum is today's while there is quorum (a cluster
	// recovered from an older snapshot starts lower), kept while it is
	// lost; a recovery's ID is kept across passes.
	if st.QuorumRevision != 9 || lost.QuorumRevision != 9 || still.QuorumRevision != 9 {
		t.Fatalf("quorum revision %d, %d, %d, want 9", st.QuorumRevision, lost.QuorumRevision, still.QuorumRevision)
	}
	lower := look(true, true, true)
	for i := range lower.members {
		lower.members[i].revision = 4
	}
	recovered := nextStatus(&etcdStatus{Quorum: false, QuorumRevision: 9, RecoverDone: "r1", RecoverRefused: "r0"}, lower, claims, removeRequest{}, action{}, false, now)
	if recovered.QuorumRevision != 4 || recovered.RecoverDone != "r1" || recovered.RecoverRefused != "r0" {
		t.Fatalf("after a recovery: %+v", recovered)
	}
	moved := func(s etcdStatus) etcdStatus {
		s.QuorumRevision++
		s.Members = slices.Clone(s.Members)
		s.Members[0].Revision++
		return s
	}
	if !sameStatus(st, moved(st)) {
		t.Error("with quorum, moved revisions alone rewrite the status")
	}
	if sameStatus(lost, moved(lost)) {
		t.Error("without quorum, a member's revision that moved (it came back) is not written")
	}
}
