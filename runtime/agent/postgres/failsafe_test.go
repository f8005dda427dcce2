package postgres

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

func TestFailsafeWant(t *testing.T) {
	prim := pgMember{Name: "pg-1", Probe: pgProbe{Reach: reachUp, WriteTimeline: 3}}
	members := []pgMember{{Name: "pg-2"}, prim, {Name: "pg-0"}}
	if got, want := failsafeWant(members, prim), "pg-1 3 pg-0,pg-1,pg-2"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	prim.Probe.WriteTimeline = 0
	if got := failsafeWant(members, prim); got != "" {
		t.Fatalf("a primary whose timeline is not known: got %q, want none", got)
	}
}

func TestRecordFailsafe(t *testing.T) {
	const a, b = "pg-1 3 pg-0,pg-1,pg-2", "pg-1 3 pg-0,pg-1,pg-2,pg-3"
	for _, c := range []struct {
		name     string
		sets     []string
		reported string
		want     []string
	}{
		{"nothing recorded, none reported", nil, "", nil},
		{"the newest reported: the older go", []string{a, b}, b, []string{b}},
		{"an older one reported: the newest may still come", []string{a, b}, a, []string{a, b}},
		{"one not recorded (a status lost) is added", []string{b}, a, []string{b, a}},
		{"none reported: the recorded stay (a reload may still come)", []string{a}, "", []string{a}},
		{"a clone's copy naming another member adds nothing", nil, "pg-0 2 pg-0,pg-1,pg-2", nil},
		{"an unreadable value adds nothing", []string{a}, "pg-1 x", []string{a}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := recordFailsafe(c.sets, "pg-1", c.reported); !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestFailsafeFence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	attached, detached, silent, refused := attachedStandby, detachedStandby, silentMember, refusedMember
	// failover: fenced 40 s ago (its lease, 10 s, from the fence is over), with
	// the members detached the given seconds ago (-1: recorded, not
	// found detached yet).
	failover := func(detachedAgo map[string]float64) *pgFailover {
		f := &pgFailover{From: "a", Reason: "the primary a does not answer in time for 10s", FencedAt: t0.Add(-40 * time.Second)}
		for _, n := range slices.Sorted(maps.Keys(detachedAgo)) {
			d := pgDetached{Member: n, Upstream: "host=10.0.0.1 port=5432"}
			if ago := detachedAgo[n]; ago >= 0 {
				d.At = t0.Add(-time.Duration(ago * float64(time.Second)))
			}
			f.Detached = append(f.Detached, d)
		}
		return f
	}
	const abc = "a 2 a,b,c"
	cases := []struct {
		name    string
		sync    int
		sets    []string
		f       *pgFailover
		members []pgMember
		kind    pgActionKind
		to      string
		detach  []string
		why     string
	}{
		{name: "every member of its list that answers is detached", sets: []string{abc}, f: failover(nil),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9), attached("c", 7)}, kind: pgDetach, detach: []string{"b", "c"}, why: "its failsafe cannot keep its lease"},
		{name: "detached: the lease is counted from the last detach", sets: []string{abc}, f: failover(map[string]float64{"b": 20, "c": 5}),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 9), detached("c", 7)}, kind: pgNone, why: "lease ends in 8s"},
		{name: "the lease over since the last detach: the most WAL is promoted", sets: []string{abc}, f: failover(map[string]float64{"b": 34, "c": 33}),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 7), detached("c", 9)}, kind: pgPromote, to: "c"},
		{name: "one detached member suffices, the other silent", sets: []string{abc}, f: failover(map[string]float64{"b": 33}),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 7), silent("c", contract.RoleReplica)}, kind: pgPromote, to: "b"},
		{name: "no member of its list answers: no failover", sets: []string{abc}, f: failover(nil),
			members: []pgMember{silent("a", contract.RoleFenced), silent("b", contract.RoleReplica), silent("c", contract.RoleReplica), attached("d", 9)}, kind: pgNone, why: "may be running with every member it was told of following it (a, b, c)"},
		{name: "recorded but not found detached (a write lost): detached again", sets: []string{abc}, f: failover(map[string]float64{"b": -1}),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 9), silent("c", contract.RoleReplica)}, kind: pgDetach, detach: []string{"b"}},
		{name: "a detached member whose receiver runs again is detached again", sets: []string{abc}, f: failover(map[string]float64{"b": 40}),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9), silent("c", contract.RoleReplica)}, kind: pgDetach, detach: []string{"b"}},
		{name: "a detached member that stops answering counts no more", sets: []string{abc}, f: failover(map[string]float64{"b": 40}),
			members: []pgMember{silent("a", contract.RoleFenced), silent("b", contract.RoleReplica), silent("c", contract.RoleReplica)}, kind: pgNone, why: "none answers to be detached"},
		{name: "every list it may hold needs a detached member", sets: []string{"a 2 a,b", abc}, f: failover(map[string]float64{"c": 40}),
			members: []pgMember{silent("a", contract.RoleFenced), silent("b", contract.RoleReplica), detached("c", 9)}, kind: pgNone, why: "(a, b)"},
		{name: "a one-member list: never", sets: []string{"a 2 a"}, f: failover(nil),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9)}, kind: pgNone, why: "(a)"},
		{name: "a list naming another primary is not its", sets: []string{"b 2 a,b,c"}, f: failover(nil),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9), attached("c", 7)}, kind: pgPromote, to: "b"},
		{name: "no list: the lease from the fence, as before", f: failover(nil),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9)}, kind: pgPromote, to: "b"},
		{name: "the old primary refuses: nothing to detach", sets: []string{abc}, f: failover(nil),
			members: []pgMember{refused("a", contract.RoleFenced), attached("b", 9), attached("c", 7)}, kind: pgPromote, to: "b"},
		{name: "synchronous: the synchronous fence comes first", sync: 1, sets: []string{abc},
			f:       func() *pgFailover { f := failover(nil); f.FencedAt = t0.Add(-time.Second); return f }(),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9), attached("c", 7)}, kind: pgDetach, detach: []string{"b", "c"}, why: "so it can acknowledge no commit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := pgView{Now: t0, Settings: FailoverSettings{}.withDefaults(), Sync: c.sync, Members: c.members,
				Status: pgStatus{Failover: c.f, FailsafeSets: c.sets, SyncSetting: `FIRST 1 ("b", "c")`, Synchronous: []string{"b"}}}
			a := decidePostgres(v)
			if a.Kind != c.kind || a.To != c.to || !slices.Equal(a.Detach, c.detach) || !strings.Contains(a.Why, c.why) {
				t.Fatalf("got %s to %q detach %v (%s), want %s to %q detach %v (%s)", a.Kind, a.To, a.Detach, a.Why, c.kind, c.to, c.detach, c.why)
			}
		})
	}
}

// A primary that answers is given its failsafe list, once.
func TestFailsafeIsWritten(t *testing.T) {
	prim := pgMember{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachUp, WriteTimeline: 2}}
	rep := pgMember{Name: "b", Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp, InRecovery: true, Streaming: true}}
	v := pgView{Now: time.Now(), Settings: FailoverSettings{}.withDefaults(), Members: []pgMember{prim, rep}}
	a := decidePostgres(v)
	if a.Kind != pgSetFailsafe || a.Member != "a" || a.Failsafe != "a 2 a,b" {
		t.Fatalf("got %s on %q (%q), want set-failsafe on a (a 2 a,b)", a.Kind, a.Member, a.Failsafe)
	}
	v.Members[0].Probe.Failsafe = a.Failsafe
	if a := decidePostgres(v); a.Kind != pgNone {
		t.Fatalf("with it written: got %s (%s), want nothing", a.Kind, a.Why)
	}
}

// Whatever the lists the old primary may hold, the members the runtime
// reaches and the times they were detached, the runtime promotes in
// place of a primary that does not answer only when the old primary's
// failsafe cannot be keeping its lease: every list it may hold has a
// member detached at least the lease and the margin ago (its follow
// time, which renews the lease, is no later than its detach), and its
// fence was as long ago (a confirmation renews no later than it).
func TestFailsafeNeverKeepsTwoPrimaries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	settings := FailoverSettings{}.withDefaults()
	rng := rand.New(rand.NewPCG(7, 19))
	promotions := 0
	for i := range 20000 {
		n := 1 + rng.IntN(5)
		names := make([]string, n)
		for j := range names {
			names[j] = fmt.Sprintf("m%d", j)
		}
		// The old primary is m0; it does not answer.
		members := []pgMember{{Name: "m0", Label: contract.RoleFenced, Probe: pgProbe{Reach: reachTimeout}}}
		f := &pgFailover{From: "m0", Reason: "r", FencedAt: t0.Add(-time.Duration(rng.IntN(100)) * time.Second)}
		for _, name := range names[1:] {
			m := pgMember{Name: name, Label: contract.RoleReplica}
			switch rng.IntN(6) {
			case 0:
				m.Probe = pgProbe{Reach: reachTimeout}
			case 1:
				m.Probe = pgProbe{Reach: reachUp, InRecovery: true, Streaming: true, Receiving: true, Upstream: "host=x", Received: uint64(rng.IntN(9))}
			default:
				m.Probe = pgProbe{Reach: reachUp, InRecovery: true, Received: uint64(rng.IntN(9))}
			}
			members = append(members, m)
			if rng.IntN(5) > 0 {
				d := pgDetached{Member: name}
				if rng.IntN(8) > 0 {
					d.At = t0.Add(-time.Duration(rng.IntN(100)) * time.Second)
				}
				f.Detached = append(f.Detached, d)
			}
		}
		// One to three lists it may hold: each a subset of the members
		// (a scale step in between), the old primary in each.
		var sets []string
		for range 1 + rng.IntN(3) {
			set := []string{"m0"}
			for _, name := range names[1:] {
				if rng.IntN(4) > 0 {
					set = append(set, name)
				}
			}
			sets = append(sets, contract.Failsafe{Primary: "m0", Timeline: 2, Members: set}.String())
		}
		v := pgView{Now: t0, Settings: settings, Members: members, Status: pgStatus{Failover: f, FailsafeSets: sets}}
		a := decidePostgres(v)
		if a.Kind != pgPromote {
			continue
		}
		promotions++
		bound := t0.Add(-settings.LeaseTTL - settings.Margin)
		if f.FencedAt.After(bound) {
			t.Fatalf("case %d: promoted %s while the old primary's lease from its fence (%s) may run", i, a.To, f.FencedAt)
		}
		for _, s := range sets {
			fs, _, _ := contract.ParseFailsafe(s)
			broken := false
			for _, o := range fs.Others() {
				m, _ := findMember(members, o)
				if at, ok := detachedAt(f, m); ok && !at.After(bound) {
					broken = true
				}
			}
			if !broken {
				t.Fatalf("case %d: promoted %s while %s may keep every member of %q following it (detached %+v, members %+v)", i, a.To, f.From, s, f.Detached, members)
			}
		}
	}
	if promotions < 1000 {
		t.Fatalf("only %d of 20000 cases promoted: the property was hardly tested", promotions)
	}
	t.Logf("%d of 20000 cases promoted, none while the old primary could keep its lease", promotions)
}
