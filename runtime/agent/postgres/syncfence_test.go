package postgres

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// Members as a failover's fence sees them: a standby streaming from the
// old primary, one detached from it, a member that does not answer in
// time, one that refuses connections.
func attachedStandby(name string, recv uint64) pgMember {
	return pgMember{Name: name, Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp, InRecovery: true, Streaming: true, Receiving: true,
		Upstream: "host=10.0.0.1 port=5432", Received: recv, Replayed: recv}}
}

func detachedStandby(name string, recv uint64) pgMember {
	return pgMember{Name: name, Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp, InRecovery: true, Received: recv, Replayed: recv}}
}

func silentMember(name, label string) pgMember {
	return pgMember{Name: name, Label: label, Probe: pgProbe{Reach: reachTimeout}}
}

func refusedMember(name, label string) pgMember {
	return pgMember{Name: name, Label: label, Probe: pgProbe{Reach: reachDown}}
}

func TestSyncFence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	attached, detached, silent, refused := attachedStandby, detachedStandby, silentMember, refusedMember
	noPromote := func(m pgMember) pgMember { m.NoPromote = true; return m }
	failover := func(detached ...string) *pgFailover {
		f := &pgFailover{From: "a", Reason: "the primary a does not answer in time for 10s", FencedAt: t0.Add(-time.Second)}
		for _, d := range detached {
			f.Detached = append(f.Detached, pgDetached{Member: d, Upstream: "host=10.0.0.1 port=5432"})
		}
		return f
	}
	first1 := `FIRST 1 ("b", "c")`
	cases := []struct {
		name    string
		sync    int
		setting string
		f       *pgFailover
		members []pgMember
		kind    pgActionKind
		to      string
		detach  []string
		why     string
	}{
		{name: "the answering standbys are detached first", sync: 1, setting: first1, f: failover(),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9), attached("c", 7)}, kind: pgDetach, detach: []string{"b", "c"}, why: "detaching b, c"},
		{name: "all detached: the one with the most WAL is promoted", sync: 1, setting: first1, f: failover("b", "c"),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 7), detached("c", 9)}, kind: pgPromote, to: "c", why: "2 of its 2 synchronous standbys are detached"},
		{name: "a detached standby whose receiver runs again is detached again", sync: 1, setting: first1, f: failover("b", "c"),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9), detached("c", 9)}, kind: pgDetach, detach: []string{"b"}},
		{name: "not recorded as detached by the runtime: detached", sync: 1, setting: first1, f: failover("b"),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 9), detached("c", 9)}, kind: pgDetach, detach: []string{"c"}},
		{name: "a standby that does not answer may still acknowledge: the lease", sync: 1, setting: first1, f: failover(),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9), silent("c", contract.RoleReplica)}, kind: pgNone, why: "1 of the 2 standbys it may wait for answer, 2 must be detached"},
		{name: "two of three needed: two detached suffice", sync: 2, setting: `FIRST 2 ("b", "c", "d")`, f: failover("b", "c"),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 9), detached("c", 8), silent("d", contract.RoleReplica)}, kind: pgPromote, to: "b"},
		{name: "ANY 2 of three: one detached is not enough", sync: 2, setting: `ANY 2 (b, c, d)`, f: failover("b"),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 9), attached("c", 8), silent("d", contract.RoleReplica)}, kind: pgDetach, detach: []string{"c"}},
		{name: "the most advanced detached standby may not be promoted: the lease", sync: 1, setting: first1, f: failover("b", "c"),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 7), noPromote(detached("c", 9))}, kind: pgNone, why: "may not be promoted"},
		{name: "another as advanced may be promoted", sync: 1, setting: first1, f: failover("b", "c"),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 9), noPromote(detached("c", 9))}, kind: pgPromote, to: "b"},
		{name: "asynchronous: the lease", sync: 0, setting: "", f: failover(),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9)}, kind: pgNone, why: "asynchronous replication"},
		{name: "no setting recorded: the lease", sync: 1, setting: "", f: failover(),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9), attached("c", 9)}, kind: pgNone, why: "no synchronous_standby_names recorded"},
		{name: "any standby may acknowledge: the lease", sync: 1, setting: "ANY 1 (*)", f: failover(),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9)}, kind: pgNone, why: `lists "*"`},
		{name: "a setting cairn cannot read: the lease", sync: 1, setting: "FIRST 1 (b", f: failover(),
			members: []pgMember{silent("a", contract.RoleFenced), attached("b", 9)}, kind: pgNone, why: `")" expected`},
		{name: "the old primary answers as primary: it is stopped, nothing detached", sync: 1, setting: first1, f: failover(),
			members: []pgMember{{Name: "a", Label: contract.RoleFenced, Probe: pgProbe{Reach: reachUp}}, attached("b", 9), attached("c", 9)}, kind: pgNone, why: "waiting for the fenced a to stop"},
		{name: "the old primary refuses: no lease, the usual choice", sync: 1, setting: first1, f: failover(),
			members: []pgMember{refused("a", contract.RoleFenced), attached("b", 9), attached("c", 7)}, kind: pgPromote, to: "b"},
		{name: "a target recorded by an earlier leader is not overridden", sync: 1, setting: first1, f: func() *pgFailover { f := failover("b", "c"); f.To = "b"; return f }(),
			members: []pgMember{silent("a", contract.RoleFenced), detached("b", 7), detached("c", 9)}, kind: pgNone, why: "the recorded target b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := pgView{Now: t0, Settings: FailoverSettings{}.withDefaults(), Sync: c.sync, Members: c.members,
				Status: pgStatus{Failover: c.f, SyncSetting: c.setting, Synchronous: []string{"b"}}}
			a := decidePostgres(v)
			if a.Kind != c.kind || a.To != c.to || !slices.Equal(a.Detach, c.detach) || !strings.Contains(a.Why, c.why) {
				t.Fatalf("got %s to %q detach %v (%s), want %s to %q detach %v (%s)", a.Kind, a.To, a.Detach, a.Why, c.kind, c.to, c.detach, c.why)
			}
		})
	}
}

// The fence's rule holds for every quorum: whenever it promotes, the
// commits the old primary can still acknowledge are none, and the member
// promoted holds every commit acknowledged before. Acknowledged commits
// are modelled as the WAL positions flushed by at least K listed
// standbys.
func TestSyncFenceNeverLosesAnAcknowledgedCommit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	promoted := 0
	for i := range 20000 {
		n := 1 + rng.IntN(5)
		k := 1 + rng.IntN(n)
		var names []string
		members := []pgMember{{Name: "p", Label: contract.RoleFenced, Probe: pgProbe{Reach: reachTimeout}}}
		f := &pgFailover{From: "p", FencedAt: t0}
		flushed := map[string]uint64{}
		for j := range n {
			name := fmt.Sprintf("s%d", j)
			names = append(names, name)
			flushed[name] = uint64(rng.IntN(100))
			m := pgMember{Name: name, Label: contract.RoleReplica, NoPromote: rng.IntN(5) == 0,
				Probe: pgProbe{Reach: reachUp, InRecovery: true, Received: flushed[name]}}
			switch rng.IntN(4) {
			case 0: // cut off with the old primary
				m.Probe = pgProbe{Reach: reachTimeout}
			case 1: // detached
				m.Probe.Upstream, m.Probe.Receiving = "", false
				f.Detached = append(f.Detached, pgDetached{Member: name})
			case 2: // recorded, but its receiver runs again
				m.Probe.Upstream, m.Probe.Receiving = "host=p", true
				f.Detached = append(f.Detached, pgDetached{Member: name})
			default:
				m.Probe.Upstream, m.Probe.Receiving = "host=p", true
			}
			members = append(members, m)
		}
		method := []string{"FIRST", "ANY"}[rng.IntN(2)]
		setting := fmt.Sprintf("%s %d (%s)", method, k, strings.Join(names, ", "))
		v := pgView{Now: t0, Settings: FailoverSettings{}.withDefaults(), Sync: k, Members: members, Status: pgStatus{Failover: f, SyncSetting: setting}}
		a := decidePostgres(v)
		if a.Kind != pgPromote {
			continue
		}
		promoted++
		// The highest position K standbys flushed is the last commit the
		// old primary may have acknowledged.
		var all []uint64
		for _, nm := range names {
			all = append(all, flushed[nm])
		}
		slices.Sort(all)
		lastAcked := all[len(all)-k]
		to, _ := findMember(members, a.To)
		if to.NoPromote || !isDetached(f, to) || to.Probe.Received < lastAcked {
			t.Fatalf("case %d (%s): promoted %s (%+v), last acknowledged %d", i, setting, a.To, to, lastAcked)
		}
		stillAttached := 0
		for _, m := range members[1:] {
			if !isDetached(f, m) {
				stillAttached++
			}
		}
		if stillAttached >= k {
			t.Fatalf("case %d (%s): promoted %s while %d standbys may still acknowledge", i, setting, a.To, stillAttached)
		}
	}
	if promoted == 0 {
		t.Fatal("no case promoted: the property was never checked")
	}
	t.Logf("%d of 20000 random clusters promoted", promoted)
}
