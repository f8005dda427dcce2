package etcd

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Taking turns to restart. etcd reads its CA bundle only when it starts,
// so a member whose mounted bundle changed must restart to trust a new
// CA (ca.go). Every member of the cluster sees the change within a
// minute or two of the others (the kubelet refreshes each pod's
// projected volume on its own schedule), so the members take turns
// without talking to each other:
//
//   - by the clock: time is cut into turns of RestartTurns.Turn, one per
//     ordinal an etcd member may have (etcdTurns), and a member begins a
//     restart only in the first half of its own turn. Two members'
//     restarts therefore begin at least half a turn apart, however their
//     bundles arrived (nodes' clocks are assumed to agree within a few
//     seconds, as NTP keeps them);
//   - by the cluster: at the moment it would begin, every other member
//     must answer over TLS and follow the same leader. A member still
//     down from the turn before, or one down for any other reason, makes
//     it wait for its next turn, so a restart never takes a second member
//     down and the voters left keep their quorum.
//
// decideRestart is that rule as a pure function of what the member saw.

// etcdTurns is the number of turns in a cycle: one for each ordinal an
// etcd member may have (spec.MaxEtcdSize), so a turn is the same for
// every member whatever the cluster's size is at the moment.
const etcdTurns = 7

// RestartTurns times the restarts that load a changed CA bundle; a zero
// field takes its default.
type RestartTurns struct {
	// Poll is how often the member reads its mounted CA bundle (10 s).
	Poll time.Duration
	// Turn is each ordinal's turn (30 s): a member begins a restart only
	// in the first half of its own, so a cycle of every ordinal's turn
	// takes etcdTurns times as long (3.5 minutes).
	Turn time.Duration
	// Stop bounds a graceful stop of etcd before it is killed (25 s,
	// within the pod's 30 s termination grace period).
	Stop time.Duration
}

func (r RestartTurns) poll() time.Duration { return cmpOr(r.Poll, 10*time.Second) }
func (r RestartTurns) turn() time.Duration { return cmpOr(r.Turn, 30*time.Second) }
func (r RestartTurns) stop() time.Duration { return cmpOr(r.Stop, 25*time.Second) }

// inTurn reports whether now is in the first half of ordinal's turn.
func inTurn(now time.Time, ordinal int, turn time.Duration) bool {
	if turn <= 0 || ordinal < 0 {
		return false
	}
	n := now.UnixNano() / int64(turn)
	if int(n%etcdTurns) != ordinal%etcdTurns {
		return false
	}
	return now.UnixNano()-n*int64(turn) < int64(turn)/2
}

// turnState is what a member whose bundle changed saw before it decides.
type turnState struct {
	// Ordinal is this member's; Turn the length of a turn.
	Ordinal int
	Turn    time.Duration
	// Probed and Now are when the member began and ended looking at the
	// cluster: both must fall in the first half of its turn.
	Probed, Now time.Time
	// BundleErr says why the mounted bundle cannot be used (ca.go).
	BundleErr error
	// ListErr says why the membership could not be read; else Members
	// is the membership, each member as it answered.
	ListErr error
	Members []memberView
}

// memberView is one member as this one saw it.
type memberView struct {
	Name    string
	Self    bool
	Learner bool
	// Started: the member has published its name and client URLs.
	Started bool
	// Err: its Status call failed; else Leader is the leader it follows
	// (0 for none).
	Err    error
	Leader uint64
}

// turnDecision is decideRestart's answer: restart now, or wait, and why.
type turnDecision struct {
	Restart bool
	Reason  string
}

func waitFor(format string, args ...any) turnDecision {
	return turnDecision{Reason: fmt.Sprintf(format, args...)}
}

// decideRestart decides whether the member restarts now to load its
// changed CA bundle, or waits (and why).
func decideRestart(s turnState) turnDecision {
	if s.BundleErr != nil {
		return waitFor("the mounted CA bundle cannot be used, etcd keeps the one it started with: %v", s.BundleErr)
	}
	if !inTurn(s.Probed, s.Ordinal, s.Turn) || !inTurn(s.Now, s.Ordinal, s.Turn) {
		return waitFor("not this member's turn")
	}
	if s.ListErr != nil {
		return waitFor("the membership cannot be read: %v", s.ListErr)
	}
	self := slices.IndexFunc(s.Members, func(m memberView) bool { return m.Self })
	if self < 0 {
		return waitFor("this member is not in the membership")
	}
	voters := 0
	for _, m := range s.Members {
		if !m.Learner {
			voters++
		}
	}
	if !s.Members[self].Learner {
		switch voters {
		case 1:
			return turnDecision{Restart: true, Reason: "the only voter: a single-member cluster pauses while it restarts"}
		case 2:
			return waitFor("two voters: the cluster loses quorum while either is down (a size between steps)")
		}
	}
	others := slices.DeleteFunc(slices.Clone(s.Members), func(m memberView) bool { return m.Self })
	slices.SortFunc(others, func(a, b memberView) int { return strings.Compare(a.Name, b.Name) })
	var leader uint64
	for _, m := range others {
		switch {
		case !m.Started:
			return waitFor("a member (%s) has not started", m.Name)
		case m.Err != nil:
			return waitFor("member %s does not answer: %v", m.Name, m.Err)
		case m.Leader == 0:
			return waitFor("member %s has no leader", m.Name)
		case leader != 0 && m.Leader != leader:
			return waitFor("the members do not follow one leader (%x, %x)", leader, m.Leader)
		}
		leader = m.Leader
	}
	return turnDecision{Restart: true, Reason: fmt.Sprintf("every other member answers and follows leader %x", leader)}
}
