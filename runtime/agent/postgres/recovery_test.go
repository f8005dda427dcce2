package postgres

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-dev/cairn/planner/contract"
)

// A primary whose server crashed while its instance manager lives is
// waited for while it recovers in place, within bounds; a crash loop, a
// recovery past the window, a synchronous cluster and a server that is
// simply down fail over as before.
func TestDecideRecoveryInPlace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	replica := pgMember{Name: "b", Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp, InRecovery: true, Streaming: true, Received: 9, Replayed: 9}}
	starting := pgMember{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachDown, Starting: true}}
	refused := pgMember{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachDown}}
	recovered := func(crash time.Time) pgMember {
		return pgMember{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachUp, Received: 9, Replayed: 9, CrashRestart: crash}}
	}
	downFor := func(d time.Duration) map[string]time.Time { return map[string]time.Time{"a": t0.Add(-d)} }
	lastRecovery := func(ago time.Duration) pgStatus {
		return pgStatus{LastRecovery: &pgRecovery{Member: "a", CrashedAt: t0.Add(-ago - time.Second), At: t0.Add(-ago)}}
	}
	cases := []struct {
		name string
		v    pgView
		kind pgActionKind
		why  string
	}{
		{name: "in crash recovery past After: waits", v: pgView{Unhealthy: downFor(3 * time.Second), Members: []pgMember{starting, replica}},
			kind: pgNone, why: "is in crash recovery in place since 3s; failover after 10s"},
		{name: "in crash recovery past the window: fails over", v: pgView{Unhealthy: downFor(10 * time.Second), Members: []pgMember{starting, replica}},
			kind: pgBeginFailover, why: "the primary a is in crash recovery in place for 10s"},
		{name: "nothing answers (its instance manager gone too): After, as before", v: pgView{Unhealthy: downFor(2 * time.Second), Members: []pgMember{refused, replica}},
			kind: pgBeginFailover, why: "the primary a is down for 2s"},
		{name: "synchronous: a recovery gets After", v: pgView{Sync: 1, Status: pgStatus{Synchronous: []string{"b"}}, Unhealthy: downFor(2 * time.Second), Members: []pgMember{starting, replica}},
			kind: pgBeginFailover, why: "synchronous replication: a failover loses nothing"},
		{name: "down again soon after a recovery in place: a crash loop, After", v: pgView{Status: lastRecovery(20 * time.Second), Unhealthy: downFor(2 * time.Second), Members: []pgMember{starting, replica}},
			kind: pgBeginFailover, why: "is down again 18s after it recovered in place from a crash (a crash loop)"},
		{name: "a crash loop: not yet After", v: pgView{Status: lastRecovery(20 * time.Second), Unhealthy: downFor(time.Second), Members: []pgMember{refused, replica}},
			kind: pgNone, why: "failover after 2s"},
		{name: "down a window after the last recovery: waited for again", v: pgView{Status: lastRecovery(contract.PostgresCrashLoopWindow + 3*time.Second), Unhealthy: downFor(3 * time.Second), Members: []pgMember{starting, replica}},
			kind: pgNone, why: "failover after 10s"},
		{name: "another member's recovery is no crash loop of this one", v: pgView{Status: pgStatus{LastRecovery: &pgRecovery{Member: "c", At: t0}}, Unhealthy: downFor(3 * time.Second), Members: []pgMember{starting, replica}},
			kind: pgNone, why: "failover after 10s"},
		{name: "back as the primary: the recovery is recorded", v: pgView{Members: []pgMember{recovered(t0.Add(-1500 * time.Millisecond)), replica}},
			kind: pgRecovered, why: "answered as the primary again 1.5s after the crash"},
		{name: "a recorded recovery is not recorded again", v: pgView{Status: pgStatus{LastRecovery: &pgRecovery{Member: "a", CrashedAt: t0.Add(-time.Minute)}}, Members: []pgMember{recovered(t0.Add(-time.Minute)), replica}},
			kind: pgNone},
		{name: "a replica that recovered in place and was promoted since: no recovery of a primary", v: pgView{Status: pgStatus{LastFailover: &pgDone{From: "c", To: "a", At: t0.Add(-time.Minute)}},
			Members: []pgMember{recovered(t0.Add(-time.Hour)), replica}}, kind: pgNone},
		{name: "fenced, in crash recovery: may take writes once it ends, until its lease", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0.Add(-5 * time.Second)}},
			Members: []pgMember{{Name: "a", Label: contract.RoleFenced, Probe: pgProbe{Reach: reachDown, Starting: true}}, replica}}, kind: pgNone, why: "is in crash recovery and may take writes once it ends, until its lease ends in 8s"},
		{name: "fenced, in crash recovery, lease over: promote", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0.Add(-13 * time.Second)}},
			Members: []pgMember{{Name: "a", Label: contract.RoleFenced, Probe: pgProbe{Reach: reachDown, Starting: true}}, replica}}, kind: pgPromote},
		{name: "fenced and refusing: promote at once, as before", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0}},
			Members: []pgMember{{Name: "a", Label: contract.RoleFenced, Probe: pgProbe{Reach: reachDown}}, replica}}, kind: pgPromote},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.v.Now, c.v.Settings = t0, FailoverSettings{}.withDefaults()
			a := decidePostgres(c.v)
			if a.Kind != c.kind || !strings.Contains(a.Why, c.why) {
				t.Fatalf("got %s (%s), want %s (%s)", a.Kind, a.Why, c.kind, c.why)
			}
		})
	}
}

func TestRecoveryWindowDefaults(t *testing.T) {
	for _, c := range []struct {
		name string
		in   FailoverSettings
		want time.Duration
	}{
		{"default", FailoverSettings{}, defaultRecovery},
		{"set", FailoverSettings{Recovery: 4 * time.Second}, 4 * time.Second},
		{"never shorter than After", FailoverSettings{After: 5 * time.Second, Recovery: 3 * time.Second}, 5 * time.Second},
	} {
		if got := c.in.withDefaults().Recovery; got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestStarting(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, true},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is not yet accepting connections"}, true},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is in recovery mode"}, true},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is shutting down"}, false},
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, false},
		{errors.New("dial tcp: connect: connection refused"), false},
	} {
		if got := starting(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}
