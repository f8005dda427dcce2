package postgres

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// Only a cluster with nothing to do, nothing under way, every member
// answering and every replica streaming is steady: a pass on an earlier
// read of the API server goes on only then.
func TestSteady(t *testing.T) {
	prim := pgMember{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachUp}}
	repl := pgMember{Name: "b", Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp, InRecovery: true, Streaming: true}}
	notStreaming, timingOut := repl, prim
	notStreaming.Probe.Streaming = false
	timingOut.Probe.Reach = reachTimeout
	for _, c := range []struct {
		name  string
		v     pgView
		first pgAction
		want  bool
	}{
		{"nothing to do", pgView{Members: []pgMember{prim, repl}}, pgAction{}, true},
		{"a wait", pgView{Members: []pgMember{prim, repl}}, pgWait("the primary a is down"), false},
		{"a label to fix", pgView{Members: []pgMember{prim, repl}}, pgAction{Kind: pgLabel}, false},
		{"a failover under way", pgView{Members: []pgMember{prim, repl}, Status: pgStatus{Failover: &pgFailover{From: "a"}}}, pgAction{}, false},
		{"a switchover under way", pgView{Members: []pgMember{prim, repl}, Status: pgStatus{Switchover: &pgSwitchover{From: "a", To: "b"}}}, pgAction{}, false},
		{"a replica not streaming", pgView{Members: []pgMember{prim, notStreaming}}, pgAction{}, false},
		{"a member timing out", pgView{Members: []pgMember{timingOut, repl}}, pgAction{}, false},
		{"no member", pgView{}, pgAction{}, false},
	} {
		if got := steady(c.v, c.first); got != c.want {
			t.Errorf("%s: steady %v, want %v", c.name, got, c.want)
		}
	}
}

// A steady cluster's read of the API server serves refreshPasses passes;
// a pass that was not steady, or one after a pause longer than
// staleAfter (another term), reads again.
func TestReusable(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		steady bool
		pause  time.Duration
		want   int
	}{
		{"steady", true, 0, refreshPasses - 1},
		{"not steady", false, 0, 0},
		{"another term", true, staleAfter + time.Second, 0},
	} {
		r := &Roles{now: func() time.Time { return now }, lastPass: now.Add(-c.pause), last: &pgRead{}, steady: c.steady}
		got := 0
		for r.reusable() != nil {
			got++
		}
		if got != c.want {
			t.Errorf("%s: %d passes on one read, want %d", c.name, got, c.want)
		}
	}
}
