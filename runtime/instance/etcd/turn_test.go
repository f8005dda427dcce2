package etcd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/certs"
)

func TestEtcdInTurn(t *testing.T) {
	turn := 30 * time.Second
	cycle := etcdTurns * turn
	base := time.Unix(0, 0).Add(100 * cycle) // the start of ordinal 0's turn
	for _, tc := range []struct {
		name    string
		at      time.Duration
		ordinal int
		want    bool
	}{
		{"start of its turn", 0, 0, true},
		{"within the first half", 14 * time.Second, 0, true},
		{"the second half is left for the restart to show", 15 * time.Second, 0, false},
		{"another ordinal's turn", 0, 1, false},
		{"ordinal 1 after ordinal 0", turn, 1, true},
		{"the last ordinal", 6 * turn, 6, true},
		{"the next cycle", cycle + 2*turn + time.Second, 2, true},
		{"ordinals past the cycle share a turn", 2 * turn, 9, true},
		{"no ordinal", 0, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inTurn(base.Add(tc.at), tc.ordinal, turn); got != tc.want {
				t.Fatalf("inTurn(+%s, %d) = %v, want %v", tc.at, tc.ordinal, got, tc.want)
			}
		})
	}
	// Every instant is in the first half of at most one ordinal's turn.
	for at := time.Duration(0); at < cycle; at += time.Second {
		n := 0
		for ord := range etcdTurns {
			if inTurn(base.Add(at), ord, turn) {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("+%s is %d ordinals' turn", at, n)
		}
	}
}

func TestEtcdDecideRestart(t *testing.T) {
	turn := 30 * time.Second
	// ordinal 1's turn began at start.
	start := time.Unix(0, 0).Add(50*etcdTurns*turn + turn)
	healthy := func(name string, self bool) memberView {
		return memberView{Name: name, Self: self, Started: true, Leader: 0xa}
	}
	three := []memberView{healthy("e-0", false), healthy("e-1", true), healthy("e-2", false)}
	with := func(ms []memberView, i int, f func(*memberView)) []memberView {
		out := append([]memberView(nil), ms...)
		f(&out[i])
		return out
	}
	for _, tc := range []struct {
		name    string
		s       turnState
		restart bool
		reason  string
	}{
		{name: "every other member healthy, in its turn", s: turnState{Members: three}, restart: true, reason: "follows leader a"},
		{name: "a bundle that does not parse", s: turnState{Members: three, BundleErr: errors.New("CA bundle: no certificate")}, reason: "cannot be used"},
		{name: "out of turn", s: turnState{Members: three, Probed: start.Add(-time.Second)}, reason: "not this member's turn"},
		{name: "looked too long: ends past the first half", s: turnState{Members: three, Now: start.Add(turn / 2)}, reason: "not this member's turn"},
		{name: "membership not read", s: turnState{ListErr: errors.New("deadline exceeded")}, reason: "cannot be read"},
		{name: "not in the membership", s: turnState{Members: three[:1]}, reason: "not in the membership"},
		{name: "another member down", s: turnState{Members: with(three, 2, func(m *memberView) { m.Err = errors.New("connection refused") })}, reason: "e-2 does not answer"},
		{name: "another member without a leader", s: turnState{Members: with(three, 0, func(m *memberView) { m.Leader = 0 })}, reason: "e-0 has no leader"},
		{name: "leaders differ", s: turnState{Members: with(three, 2, func(m *memberView) { m.Leader = 0xb })}, reason: "one leader"},
		{name: "a member added and not started", s: turnState{Members: append(three, memberView{Learner: true})}, reason: "has not started"},
		{name: "a started learner counts as a member to wait for", s: turnState{Members: append(three, memberView{Name: "e-3", Learner: true, Started: true, Err: errors.New("refused")})}, reason: "e-3 does not answer"},
		{name: "single member", s: turnState{Members: three[1:2]}, restart: true, reason: "single-member"},
		{name: "two voters", s: turnState{Members: three[:2]}, reason: "two voters"},
		{
			name:    "a learner beside two voters restarts: no quorum rests on it",
			s:       turnState{Members: []memberView{healthy("e-0", false), healthy("e-1", false), {Name: "e-2", Self: true, Learner: true, Started: true}}, Ordinal: 2},
			restart: true, reason: "follows leader a",
		},
		{name: "seven members", s: turnState{Members: []memberView{
			healthy("e-0", false), healthy("e-1", true), healthy("e-2", false), healthy("e-3", false),
			healthy("e-4", false), healthy("e-5", false), healthy("e-6", false)}}, restart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			s.Turn = turn
			if s.Ordinal == 0 {
				s.Ordinal = 1
			}
			ts := start.Add(time.Duration(s.Ordinal-1) * turn)
			if s.Probed.IsZero() {
				s.Probed = ts.Add(time.Second)
			}
			if s.Now.IsZero() {
				s.Now = ts.Add(3 * time.Second)
			}
			d := decideRestart(s)
			if d.Restart != tc.restart || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("decideRestart = %+v, want restart %v with a reason containing %q", d, tc.restart, tc.reason)
			}
		})
	}
}

// kubeletRefresh bounds how late the kubelet brings a changed Secret
// into a running pod's projected volume: its sync period (1 minute) and
// its Secret cache's TTL (1 minute; with the default Watch strategy the
// cache is current within seconds).
const kubeletRefresh = 2 * time.Minute

// TestEtcdCAOverlapCoversEveryRestart: the runtime's overlap between its two
// moves (certs.DefaultCAOverlap) leaves time for every member to restart
// onto the new bundle with the default turns, and for many turns missed
// to a member that is down.
func TestEtcdCAOverlapCoversEveryRestart(t *testing.T) {
	var r RestartTurns
	cycle := etcdTurns * r.turn()
	// Every member sees the new bundle by kubeletRefresh and a poll; each
	// has its turn within the next cycle, and its restart (a stop of at
	// most r.stop(), then a start) ends within it.
	all := kubeletRefresh + r.poll() + cycle + r.stop()
	missed := (certs.DefaultCAOverlap - all) / cycle
	t.Logf("every member restarts within %s of the first move; the overlap (%s) leaves %d more cycles of turns (%s each)",
		all, certs.DefaultCAOverlap, missed, cycle)
	if missed < 10 {
		t.Fatalf("the overlap leaves %d cycles of turns to spare, want at least 10", missed)
	}
	if r.poll() > r.turn()/2 {
		t.Fatalf("a poll every %s can miss the first half of a %s turn", r.poll(), r.turn())
	}
}
