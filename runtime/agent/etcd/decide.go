package etcd

import (
	"cmp"
	"fmt"
	"slices"
)

// view is what one pass sees of an etcd cluster: the input of decide.
type view struct {
	Members []memberView
	// CanMoveLeader: etcd 3.3+ can hand leadership over (MoveLeader).
	CanMoveLeader bool
	// Remove is the pending remove-member request of a merged
	// EtcdRemoveMember step; empty when there is none or it is done.
	Remove removeRequest
	// Replacing names the members removed because their data was lost
	// that have not joined again yet (the last status's): a membership
	// change in flight.
	Replacing []string
}

// removeRequest is a merged EtcdRemoveMember step's request.
type removeRequest struct{ ID, Member string }

// memberView is one member of the membership, with what its own etcd and
// its pod say.
type memberView struct {
	ID      uint64
	Name    string // empty until the member has started
	Learner bool
	Leader  bool
	// Healthy: it answers and follows a leader.
	Healthy bool
	// Applied is its raft applied index, Revision its store revision:
	// together how far ahead it is.
	Applied  uint64
	Revision int64
	// PodProblem says why its pod may not get a vote (not one the
	// StatefulSet keeps, not ready); empty when it may.
	PodProblem string
	// ClaimReplaced: its volume claim is not the one recorded for this
	// member ID, so its data directory is a new, empty one.
	ClaimReplaced bool
	// Stray: a learner whose pod the StatefulSet does not keep (its
	// ordinal is at or above the replicas): one that added itself again
	// after a scale-in's removal, while its pod ran on with a mounted
	// config the kubelet had not refreshed yet, or one of a reverted
	// scale-out. Its pod is going away, so it never votes.
	Stray bool
	// Node is the node its pod runs on, Cordoned whether that node is
	// cordoned (spec.unschedulable: a drain begins so); Node is empty
	// when it is not known (not read, the pod not scheduled, not the
	// StatefulSet's, or the node not readable).
	Node     string
	Cordoned bool
}

// actionKind is what a pass does.
type actionKind int

const (
	actNone actionKind = iota
	actPromote
	actMoveLeader
	actRemove
)

func (k actionKind) String() string {
	return [...]string{"none", "promote", "move-leader", "remove"}[k]
}

// action is decide's answer: at most one change per pass.
type action struct {
	Kind   actionKind
	Member memberView
	// To is the member leadership moves to (actMoveLeader).
	To memberView
	// Replace: the removal replaces a member whose data is lost; it
	// rejoins as a learner afterwards.
	Replace bool
	// Why says why the action is taken, or, with actNone, what the
	// cluster waits for (empty when nothing is pending).
	Why string
}

// decide is the runtime's etcd policy: given the membership, which one
// change, if any, this pass makes. In order: nothing without quorum; a
// requested removal (leadership moved away first); the removal of a
// stray learner; the replacement of a member whose claim was replaced
// (removed here, re-added by its instance manager); the promotion of a
// caught-up learner; leadership moved off a leader whose node is
// cordoned (drain.go). No change may leave fewer healthy voters than a
// quorum.
func decide(v view) action {
	healthy, voters := v.voters()
	if voters == 0 || healthy < voters/2+1 {
		return action{Why: fmt.Sprintf("quorum is lost (%d of %d voters healthy): no automatic action; bring members back or restore from the latest snapshot (docs/etcd-recovery.md)", healthy, voters)}
	}
	if a, ok := v.removal(); ok {
		return a
	}
	if a, ok := v.stray(); ok {
		return a
	}
	if a, ok := v.replacement(); ok {
		return a
	}
	p := v.promotion()
	if p.Kind != actNone {
		return p
	}
	if a, ok := v.drainMove(); ok {
		return a
	}
	return p
}

// voters counts the healthy voters and all voters.
func (v view) voters() (healthy, voters int) {
	for _, m := range v.Members {
		if m.Learner {
			continue
		}
		voters++
		if m.Healthy {
			healthy++
		}
	}
	return healthy, voters
}

func (v view) removal() (action, bool) {
	if v.Remove.Member == "" {
		return action{}, false
	}
	i := slices.IndexFunc(v.Members, func(m memberView) bool { return m.Name == v.Remove.Member })
	if i < 0 {
		return action{}, false // done
	}
	m := v.Members[i]
	why := "step " + v.Remove.ID + " removes it"
	if m.Leader && v.CanMoveLeader {
		to, ok := v.transferee(m.ID, false)
		if !ok {
			return action{Why: fmt.Sprintf("%s leads and no other healthy voter can take over before it is removed", m.Name)}, true
		}
		return action{Kind: actMoveLeader, Member: m, To: to, Why: why + ", and it leads"}, true
	}
	if !v.safeWithout(m) {
		return action{Why: fmt.Sprintf("removing %s now would leave fewer healthy voters than a quorum", m.Name)}, true
	}
	return action{Kind: actRemove, Member: m, Why: why}, true
}

// transferee is the healthy voter, other than id, that is furthest
// ahead; with uncordoned, only one whose node is known and not cordoned.
func (v view) transferee(id uint64, uncordoned bool) (memberView, bool) {
	var best memberView
	found := false
	for _, m := range v.Members {
		if m.ID == id || m.Learner || !m.Healthy || uncordoned && (m.Node == "" || m.Cordoned) {
			continue
		}
		if !found || ahead(m, best) > 0 {
			best, found = m, true
		}
	}
	return best, found
}

func ahead(a, b memberView) int {
	return cmp.Or(cmp.Compare(a.Applied, b.Applied), cmp.Compare(a.Revision, b.Revision), cmp.Compare(b.Name, a.Name))
}

// safeWithout reports whether the voters left after removing m still have
// a quorum of healthy ones.
func (v view) safeWithout(m memberView) bool {
	healthy, voters := v.voters()
	if !m.Learner {
		voters--
		if m.Healthy {
			healthy--
		}
	}
	return voters > 0 && healthy >= voters/2+1
}

func (v view) replacement() (action, bool) {
	for _, m := range v.Members {
		if !m.ClaimReplaced || m.Healthy {
			continue // a healthy member has its data, whatever its claim says
		}
		if !v.safeWithout(m) {
			return action{Why: fmt.Sprintf("%s lost its data, but removing it now would leave fewer healthy voters than a quorum", m.Name)}, true
		}
		return action{Kind: actRemove, Member: m, Replace: true, Why: "its volume claim was replaced, so its data is lost; its pod re-adds it as a learner"}, true
	}
	return action{}, false
}

// stray removes the first stray learner: a learner holds no vote, so
// quorum is the same without it, and left in place it would be listed
// for ever with no pod to start it.
func (v view) stray() (action, bool) {
	for _, m := range v.Members {
		if m.Learner && m.Stray {
			return action{Kind: actRemove, Member: m, Why: "a learner whose pod the StatefulSet does not keep (it joined again after its removal, or its scale-out was reverted)"}, true
		}
	}
	return action{}, false
}

// promotion promotes the first started learner whose pod may vote and
// that answers; etcd itself refuses one that has not caught up yet.
func (v view) promotion() action {
	why := ""
	for _, m := range v.Members {
		switch {
		case !m.Learner || m.Name == "":
			continue
		case m.PodProblem != "":
			why = fmt.Sprintf("learner %s is not promoted: %s", m.Name, m.PodProblem)
		case !m.Healthy:
			why = fmt.Sprintf("learner %s does not answer yet", m.Name)
		default:
			return action{Kind: actPromote, Member: m, Why: "it has started and its pod is ready"}
		}
	}
	return action{Why: why}
}
