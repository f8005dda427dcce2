package etcd

import (
	"maps"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
)

func TestMemberRoles(t *testing.T) {
	const L, F = contract.RoleLeader, contract.RoleFollower
	on := func(m memberView, node string, cordoned bool) memberView {
		m.Node, m.Cordoned = node, cordoned
		return m
	}
	lead := func(m memberView) memberView { m.Leader = true; return m }
	e0, e1, e2 := voter(1, "e-0"), voter(2, "e-1"), voter(3, "e-2")
	for _, c := range []struct {
		name       string
		v          view
		blindNodes bool
		want       map[string]string
	}{
		{"the leader and its followers", view{CanMoveLeader: true, Members: members(lead(e0), e1, e2)}, false,
			map[string]string{"e-0": L, "e-1": F, "e-2": F}},
		{"no leader (an election): nothing said", view{CanMoveLeader: true, Members: members(e0, e1, e2)}, false, nil},
		{"nodes not readable: a follower, as no drain is seen to hand over for", view{CanMoveLeader: true, Members: members(lead(e0), e1, e2)}, true,
			map[string]string{"e-0": F, "e-1": F, "e-2": F}},
		{"the leader's node cordoned, leadership can move: still the leader until it has",
			view{CanMoveLeader: true, Members: members(on(lead(e0), "a", true), on(e1, "b", false), on(e2, "c", false))}, false,
			map[string]string{"e-0": L, "e-1": F, "e-2": F}},
		{"the leader's node cordoned, nowhere to go: a follower, so its drain goes on",
			view{CanMoveLeader: true, Members: members(on(lead(e0), "a", true), on(e1, "b", true), on(e2, "c", true))}, false,
			map[string]string{"e-0": F, "e-1": F, "e-2": F}},
		{"the leader's node cordoned, etcd before 3.3: a follower",
			view{CanMoveLeader: false, Members: members(on(lead(e0), "a", true), on(e1, "b", false), on(e2, "c", false))}, false,
			map[string]string{"e-0": F, "e-1": F, "e-2": F}},
		{"a learner is a follower; one not started and a stray are not labelled",
			view{CanMoveLeader: true, Members: members(lead(e0), e1, with(voter(4, "e-3"), func(m *memberView) { m.Learner = true }),
				memberView{ID: 9, Learner: true}, with(voter(5, "e-7"), func(m *memberView) { m.Learner, m.Stray = true, true }))}, false,
			map[string]string{"e-0": L, "e-1": F, "e-3": F}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := memberRoles(c.v, !c.blindNodes); !maps.Equal(got, c.want) {
				t.Errorf("roles %v, want %v", got, c.want)
			}
		})
	}
}
