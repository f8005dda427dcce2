package etcd

import (
	"fmt"
	"slices"
	"strings"
)

// drainMove moves leadership off a leader whose node is cordoned
// (spec.unschedulable, which kubectl drain sets before it evicts): the
// budget (renderer/disruption.go) lets the leader's pod be evicted like
// any member's, and a leader that stops makes the cluster elect a new
// one, writes waiting meanwhile; handed over first, the election is
// etcd's MoveLeader, to the most caught-up healthy voter on a node that
// is not cordoned. ok is false when the leader's node is not cordoned
// (or not known).
//
// It waits, and says why, while a membership change is in flight (a
// learner, a requested removal, a member being replaced), while any
// voter is not healthy, before etcd 3.3 (no MoveLeader), and when no
// healthy voter runs on an uncordoned node: the budget then still lets
// the leader go, one member at a time, and etcd elects a new leader as
// for any member that stops (docs/runtime.md, "Drains").
func (v view) drainMove() (action, bool) {
	i := slices.IndexFunc(v.Members, func(m memberView) bool { return m.Leader && !m.Learner })
	if i < 0 || !v.Members[i].Cordoned {
		return action{}, false
	}
	l := v.Members[i]
	head := fmt.Sprintf("node %s of the leader %s is cordoned", l.Node, l.Name)
	wait := func(why string) (action, bool) {
		return action{Why: head + ", but leadership stays: " + why + " (docs/runtime.md, Drains)"}, true
	}
	if !v.CanMoveLeader {
		return wait("a member runs etcd before 3.3, which cannot hand leadership over")
	}
	if why := v.changing(); why != "" {
		return wait(why)
	}
	if healthy, voters := v.voters(); healthy < voters {
		return wait(fmt.Sprintf("the cluster is not healthy (%d of %d voters healthy)", healthy, voters))
	}
	to, ok := v.transferee(l.ID, true)
	if !ok {
		return wait("no other healthy voter runs on a node that is not cordoned")
	}
	return action{Kind: actMoveLeader, Member: l, To: to, Why: head}, true
}

// changing says which membership change is in flight ("" when none):
// leadership is not moved meanwhile.
func (v view) changing() string {
	var learners []string
	for _, m := range v.Members {
		if m.Learner {
			learners = append(learners, shownName(m))
		}
	}
	switch {
	case v.Remove.Member != "":
		return fmt.Sprintf("step %s removes %s", v.Remove.ID, v.Remove.Member)
	case len(learners) > 0:
		return "a membership change is in flight (learner " + strings.Join(learners, ", ") + " not promoted yet)"
	case len(v.Replacing) > 0:
		return "a membership change is in flight (" + strings.Join(v.Replacing, ", ") + " being replaced)"
	}
	return ""
}

// shownName names a member in messages: its name, or its ID before it
// started.
func shownName(m memberView) string {
	if m.Name != "" {
		return m.Name
	}
	return fmt.Sprintf("id %x", m.ID)
}
