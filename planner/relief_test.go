package planner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// reliefNow is when the relief tests judge gates: no spec of theirs has a
// maintenance window or a backup-age gate, so any time does.
var reliefNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// noSpace is etcd cluster c with NOSPACE raised on e-0 as etcd shows it:
// /health answers false on every member, so none is ready, while each
// still answers in its role.
func noSpace(c *live.Cluster) *live.Cluster {
	alarm(c, contract.EtcdAlarmNoSpace, "e-0")
	for i := range c.Members {
		c.Members[i].Ready = false
	}
	return c
}

// noSpaceUntilRestarted keeps NOSPACE raised until every member runs the
// template's revision with the raised quota rendered, then plays the
// runtime: it disarms the alarm and the members are ready again.
func noSpaceUntilRestarted(c *live.Cluster) {
	if len(c.Alarms) == 0 {
		return
	}
	for _, m := range c.Members {
		if m.TemplateRevision != c.StatefulSet.TemplateRevision || c.StatefulSet.TemplateRevision == "" {
			for i := range c.Members {
				c.Members[i].Ready = false
			}
			return
		}
	}
	c.Alarms = nil
	for i := range c.Members {
		c.Members[i].Ready = true
	}
}

// replicaDown is PostgreSQL cluster c with the member at ordinal ord down.
func replicaDown(c *live.Cluster, ord int) *live.Cluster {
	c.Members[ord].Ready = false
	return c
}

// A step planned to relieve a fault is gated on what it needs, never on
// the health the fault takes away: from the fault's state, each planned
// step's before-gates hold, and once it is carried out (the fault still
// there) its after-gates hold, so the plan goes on to the next step.
func TestReliefIsNotHeldByTheFault(t *testing.T) {
	cases := []struct {
		name     string
		desired  spec.Cluster
		observed *live.Cluster
		// keep re-imposes the fault after each step.
		keep  func(*live.Cluster)
		steps []string
		// then is the status once no relief is left to plan.
		then plan.Status
	}{
		{name: "etcd NOSPACE, every member unready: the quota raise's rolling restart",
			desired: etcdSpec(t, 3, "3.5.21", "spaceQuota: 4Gi"), observed: noSpace(etcdLive(3, "3.5.21", 0)), keep: noSpaceUntilRestarted,
			steps: []string{"restart-2-" + quotaRevision("4294967296"), "restart-1-" + quotaRevision("4294967296"), "restart-0-" + quotaRevision("4294967296")},
			then:  plan.StatusConverged},
		{name: "etcd NOSPACE on five members led by the top one: the quota raise and a storage growth",
			desired: etcdSpec(t, 5, "3.6.16", "spaceQuota: 8Gi", "storage: 20Gi"), observed: noSpace(etcdLive(5, "3.6.16", 4)), keep: noSpaceUntilRestarted,
			steps: []string{"restart-4-" + quotaRevision("8589934592"), "restart-3-" + quotaRevision("8589934592"), "restart-2-" + quotaRevision("8589934592"),
				"restart-1-" + quotaRevision("8589934592"), "restart-0-" + quotaRevision("8589934592"), "expand-storage-20gi"},
			then: plan.StatusConverged},
		{name: "etcd NOSPACE on a single member: its restart (which stops it, as the step says) needs the quorum it has",
			desired: etcdSpec(t, 1, "3.5.21", "spaceQuota: 4Gi"), observed: noSpace(etcdLive(1, "3.5.21", 0)), keep: noSpaceUntilRestarted,
			steps: []string{"restart-0-" + quotaRevision("4294967296")}, then: plan.StatusConverged},
		{name: "etcd NOSPACE found half-way through the quota raise: the rest of it",
			desired: etcdSpec(t, 3, "3.5.21", "spaceQuota: 4Gi"),
			observed: noSpace(with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) {
				c.StatefulSet.TemplateRevision, c.StatefulSet.UpdatePartition, c.SpaceQuota = quotaRevision("4294967296"), 2, "4294967296"
				c.Members[2].TemplateRevision = quotaRevision("4294967296")
			})), keep: noSpaceUntilRestarted,
			steps: []string{"restart-1-" + quotaRevision("4294967296"), "restart-0-" + quotaRevision("4294967296")},
			then:  plan.StatusConverged},
		{name: "PostgreSQL with a synchronous standby down: the spec's lower synchronousStandbys",
			desired: pgSpec(t, 3, "15.4", "synchronousStandbys: 1"), observed: replicaDown(with(pgLive(3, "15.4", 0), func(c *live.Cluster) { c.SynchronousStandbys = 2 }), 2),
			keep: func(c *live.Cluster) { c.Members[2].Ready = false }, steps: []string{"sync-standbys-1"}, then: plan.StatusWaiting},
		{name: "PostgreSQL with both standbys down, the primary elsewhere: no synchronous standby, and the volumes grow",
			desired:  pgSpec(t, 3, "15.4", "storage: 20Gi"),
			observed: replicaDown(replicaDown(with(pgLive(3, "15.4", 1), func(c *live.Cluster) { c.SynchronousStandbys = 2 }), 0), 2),
			keep:     func(c *live.Cluster) { c.Members[0].Ready, c.Members[2].Ready = false, false }, steps: []string{"sync-standbys-0", "expand-storage-20gi"},
			then: plan.StatusWaiting},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state, done := tc.observed, []string{}
			for range 20 {
				p := kinds.PlanCluster(tc.desired, state, nil)
				if p.Status != plan.StatusPlanned {
					if p.Status != tc.then {
						t.Fatalf("after %v the plan is %s (waiting %v, refusals %v), want %s", done, p.Status, p.Waiting, p.Refusals, tc.then)
					}
					break
				}
				s := p.Steps[0]
				if ok, why := gates.Pass(gates.Before(s, tc.desired, state, reliefNow)); !ok {
					t.Fatalf("after %v, step %s is held by the fault it relieves: %s", done, s.ID, why)
				}
				next := apply(t, state, tc.desired, s)
				tc.keep(next)
				if len(next.Alarms) > 0 || slices.ContainsFunc(next.Members, func(m live.Member) bool { return !m.Ready }) {
					if ok, why := gates.Pass(gates.After(s, tc.desired, next, reliefNow)); !ok {
						t.Fatalf("step %s, carried out while the fault lasts, never shows done: %s", s.ID, why)
					}
				}
				done, state = append(done, s.ID), next
			}
			if !slices.Equal(done, tc.steps) {
				t.Errorf("steps taken %v, want %v", done, tc.steps)
			}
		})
	}
}

// What is planned while a fault lasts says so in its pull request: while
// what, why it relieves it and what it waits for instead of full health;
// and no gate of it judges readiness.
func TestReliefSaysSo(t *testing.T) {
	cases := []struct {
		name     string
		desired  spec.Cluster
		observed *live.Cluster
		says     []string
		needs    plan.GateKind
	}{
		{name: "etcd quota raise", desired: etcdSpec(t, 3, "3.5.21", "spaceQuota: 4Gi"), observed: noSpace(etcdLive(3, "3.5.21", 0)),
			says: []string{"planned while NOSPACE is raised on e-0", "disarm the alarm", "waits only until a quorum of the voting members besides e-2 answers"}, needs: plan.GateQuorum},
		{name: "PostgreSQL synchronous standbys", desired: pgSpec(t, 3, "15.4", "synchronousStandbys: 1"),
			observed: replicaDown(with(pgLive(3, "15.4", 0), func(c *live.Cluster) { c.SynchronousStandbys = 2 }), 1),
			says:     []string{"planned while the cluster waits (pg-1 is ready)", "commits wait", "waits only until pg-0 is the primary"}, needs: plan.GatePrimary},
		{name: "storage growth while waiting", desired: pgSpec(t, 3, "15.4", "storage: 20Gi"), observed: replicaDown(pgLive(3, "15.4", 0), 1),
			says: []string{"planned while the cluster waits (pg-1 is ready)", "needs no member to be ready"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := kinds.PlanCluster(tc.desired, tc.observed, nil)
			if p.Status != plan.StatusPlanned {
				t.Fatalf("status %s, waiting %v", p.Status, p.Waiting)
			}
			s := p.Steps[0]
			for _, say := range tc.says {
				if !strings.Contains(s.Summary, say) {
					t.Errorf("summary %q does not say %q", s.Summary, say)
				}
			}
			for _, g := range s.Gates {
				if g.Kind == plan.GateClusterHealthy || g.Kind == plan.GateMemberReady || g.Kind == plan.GateMemberRestarted {
					t.Errorf("gate %+v judges readiness", g)
				}
			}
			if tc.needs != "" && (!hasGate(s, tc.needs, plan.Before) || !hasGate(s, tc.needs, plan.After)) {
				t.Errorf("gates %+v: want %s before and after", s.Gates, tc.needs)
			}
			if err := p.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// What does not relieve the fault, or lacks what the relief needs, waits.
func TestNoReliefWithoutWhatItNeeds(t *testing.T) {
	runCases(t, []planCase{
		{name: "PostgreSQL: synchronousStandbys raised while a standby is down waits",
			desired: pgSpec(t, 3, "15.4", "synchronousStandbys: 2"), observed: replicaDown(with(pgLive(3, "15.4", 0), func(c *live.Cluster) { c.SynchronousStandbys = 1 }), 2),
			status: plan.StatusWaiting, waiting: "pg-2 is ready"},
		{name: "PostgreSQL: the primary down: lowering needs the primary, so it waits",
			desired: pgSpec(t, 3, "15.4", "synchronousStandbys: 1"), observed: replicaDown(with(pgLive(3, "15.4", 0), func(c *live.Cluster) { c.SynchronousStandbys = 2 }), 0),
			status: plan.StatusWaiting, waiting: "pg-0 is ready"},
		{name: "PostgreSQL: a standby down and nothing lowered: it waits",
			desired: pgSpec(t, 3, "15.4", "synchronousStandbys: 1"), observed: replicaDown(with(pgLive(3, "15.4", 0), func(c *live.Cluster) { c.SynchronousStandbys = 1 }), 2),
			status: plan.StatusWaiting, waiting: "pg-2 is ready"},
		{name: "etcd NOSPACE: a resources change relieves nothing and waits",
			desired: etcdSpec(t, 3, "3.5.21", "resources: {requests: {cpu: '1'}}"), observed: noSpace(etcdLive(3, "3.5.21", 0)),
			status: plan.StatusWaiting, waiting: "NOSPACE"},
		{name: "etcd NOSPACE without quorum: the quota raise waits for it",
			desired: etcdSpec(t, 3, "3.5.21", "spaceQuota: 4Gi"),
			observed: noSpace(with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) {
				c.Members[1].Role, c.Members[2].Role = live.RoleUnknown, live.RoleUnknown
			})),
			status: plan.StatusWaiting, waiting: "quorum is lost"},
	})
}

// The relief gates judge what they say.
func TestReliefGates(t *testing.T) {
	rev := quotaRevision("4294967296")
	quorum := plan.Gate{Kind: plan.GateQuorum, When: plan.Before}
	rejoined := plan.Gate{Kind: plan.GateMemberRejoined, When: plan.After, Member: "e-2", Revision: rev}
	quorumBesides := func(member string) plan.Gate {
		return plan.Gate{Kind: plan.GateQuorum, When: plan.Before, Member: member}
	}
	desired := etcdSpec(t, 3, "3.5.21")
	cases := []struct {
		name string
		g    plan.Gate
		obs  *live.Cluster
		pass bool
	}{
		{"quorum: every voter unready but answering", quorum, noSpace(etcdLive(3, "3.5.21", 0)), true},
		{"quorum: two of three unknown", quorum, with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[0].Role, c.Members[1].Role = live.RoleUnknown, live.RoleUnknown }), false},
		{"quorum: one of three lost its data, one unknown", quorum, with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[0].DataLost, c.Members[1].Role = true, live.RoleUnknown }), false},
		{"quorum: a learner does not count", quorum, with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[2].Role = live.RoleLearner }), true},
		{"quorum: a PostgreSQL cluster has no voters", quorum, pgLive(3, "15.4", 0), false},
		{"quorum besides the member restarted: every other voter answers", quorumBesides("e-1"), noSpace(etcdLive(3, "3.5.21", 0)), true},
		{"quorum besides the member restarted: another is down, so the restart would lose quorum", quorumBesides("e-1"),
			noSpace(with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[2].Role = live.RoleUnknown })), false},
		{"quorum besides the member restarted: that member is the one down", quorumBesides("e-2"),
			noSpace(with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[2].Role = live.RoleUnknown })), true},
		{"quorum besides the member restarted: a single member has none", quorumBesides("e-0"), noSpace(etcdLive(1, "3.5.21", 0)), false},
		{"rejoined: the revision, unready", rejoined, noSpace(with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[2].TemplateRevision = rev })), true},
		{"rejoined: the old revision", rejoined, noSpace(etcdLive(3, "3.5.21", 0)), false},
		{"rejoined: the revision, its role unknown", rejoined, with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[2].TemplateRevision, c.Members[2].Role = rev, live.RoleUnknown }), false},
		{"rejoined: the member gone", rejoined, etcdLive(2, "3.5.21", 0), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := gates.Evaluate(tc.g, desired, tc.obs, reliefNow)
			if r.Pass != tc.pass || (!r.Pass && r.Reason == "") {
				t.Errorf("pass = %v (%s), want %v", r.Pass, r.Reason, tc.pass)
			}
		})
	}
}
