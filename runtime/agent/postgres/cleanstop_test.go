package postgres

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

func TestDecideCleanStop(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rep := func(name string, recv uint64) pgMember {
		return pgMember{Name: name, Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp, InRecovery: true, Received: recv, Replayed: recv}}
	}
	down := pgMember{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachDown}}
	justDown := map[string]time.Time{"a": t0.Add(-100 * time.Millisecond)}
	stop := func(lsn uint64, at time.Time) map[string]pgCleanStop {
		return map[string]pgCleanStop{"a": {LSN: lsn, At: at}}
	}
	runDecideCases(t, t0, []decideCase{
		{name: "unclean: the failover timer runs", v: pgView{Unhealthy: justDown, Members: []pgMember{down, rep("b", 9)}},
			kind: pgNone, why: "failover after 2s"},
		{name: "clean stop, a replica received its final LSN: hand over at once", v: pgView{Unhealthy: justDown, CleanStops: stop(9, t0),
			Members: []pgMember{down, rep("b", 9), rep("c", 8)}}, kind: pgBeginFailover, to: "b", why: "stopped cleanly"},
		{name: "clean stop, the pod gone already: hand over at once", v: pgView{Unhealthy: justDown, CleanStops: stop(9, t0), Status: pgStatus{Primary: "a"},
			Members: []pgMember{rep("b", 7), rep("c", 12)}}, kind: pgBeginFailover, to: "c"},
		{name: "clean stop, no replica received its final LSN: the failover timer runs", v: pgView{Unhealthy: justDown, CleanStops: stop(9, t0),
			Members: []pgMember{down, rep("b", 8)}}, kind: pgNone, why: "failover after 2s"},
		{name: "clean stop, no replica received it: after the timer, a failover as for any", v: pgView{Unhealthy: map[string]time.Time{"a": t0.Add(-2 * time.Second)}, CleanStops: stop(9, t0),
			Members: []pgMember{down, rep("b", 8)}}, kind: pgBeginFailover},
		{name: "clean stop: never to a no-promote replica", v: pgView{Unhealthy: justDown, CleanStops: stop(9, t0),
			Members: []pgMember{down, func() pgMember { m := rep("b", 9); m.NoPromote = true; return m }()}}, kind: pgNone, why: "failover after 2s"},
		{name: "an earlier stop's record: the failover timer runs", v: pgView{Unhealthy: justDown, CleanStops: stop(9, t0.Add(-time.Minute)),
			Members: []pgMember{down, rep("b", 9)}}, kind: pgNone, why: "failover after 2s"},
		{name: "a record while the primary answers: nothing", v: pgView{CleanStops: stop(9, t0),
			Members: []pgMember{{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachUp, Received: 12}}, rep("b", 12)}}, kind: pgNone},
		{name: "a primary in crash recovery is no clean stop", v: pgView{Unhealthy: justDown, CleanStops: stop(9, t0),
			Members: []pgMember{{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachDown, Starting: true}}, rep("b", 9)}}, kind: pgNone, why: "crash recovery"},
		{name: "a primary that only times out is no clean stop", v: pgView{Unhealthy: justDown, CleanStops: stop(9, t0),
			Members: []pgMember{{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachTimeout}}, rep("b", 9)}}, kind: pgNone, why: "failover after 10s"},
		{name: "synchronous: a replica holding the final LSN is enough", v: pgView{Sync: 1, Unhealthy: justDown, CleanStops: stop(9, t0),
			Members: []pgMember{down, rep("b", 9)}}, kind: pgBeginFailover, to: "b"},
		{name: "the hand-over's target is kept: fence, then promote it", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", To: "b", FencedAt: t0}},
			Members: []pgMember{{Name: "a", Label: contract.RoleFenced, Probe: pgProbe{Reach: reachDown}}, rep("b", 9), rep("c", 10)}}, kind: pgPromote, to: "b"},
	})
}

func TestDecodeCleanStops(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	good, err := contract.EncodeCleanStop(contract.PostgresCleanStop{LSN: "1/2A", Timeline: 3, At: at})
	if err != nil {
		t.Fatal(err)
	}
	got, errs := decodeCleanStops(map[string]string{"pg-0": good, "pg-1": "", "pg-2": "{", "pg-3": `{"lsn":"x","at":"2026-01-01T00:00:00Z"}`})
	if len(got) != 1 || got["pg-0"].LSN != 1<<32|0x2A || !got["pg-0"].At.Equal(at) {
		t.Errorf("got %+v", got)
	}
	if len(errs) != 2 {
		t.Errorf("errors %v, want pg-2's and pg-3's", errs)
	}
}
