package planner

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// quotaRevision is the template revision of a rolling restart that
// brings quota bytes (and no resources).
func quotaRevision(bytes string) string {
	if bytes == "" {
		return contract.TemplateRevisionOf(contract.Resources{}, nil)
	}
	return contract.TemplateRevisionOf(contract.Resources{}, map[string]string{contract.KeyEtcdQuotaBackendBytes: bytes})
}

func alarm(c *live.Cluster, name, member string) *live.Cluster {
	c.Alarms = append(c.Alarms, live.Alarm{Member: member, Alarm: name, Since: "2026-11-30T02:00:00Z"})
	return c
}

func noCompaction(c *live.Cluster) *live.Cluster {
	c.Compaction = nil
	return c
}

func TestEtcdCompactionPlans(t *testing.T) {
	runCases(t, []planCase{
		{
			name:    "a cluster rendered before compaction was planned gets the default policy, not reversible",
			desired: etcdSpec(t, 3, "3.5.21"), observed: noCompaction(etcdLive(3, "3.5.21", 0)),
			status: plan.StatusPlanned, steps: []string{"configure-compaction"},
			check: func(t *testing.T, p plan.Plan) {
				s := p.Steps[0]
				cp := s.Params.EtcdConfigureCompaction
				if cp.From != nil || cp.To != (plan.CompactionSettings{Mode: "periodic", Retention: "1h"}) {
					t.Errorf("params = %+v", cp)
				}
				if s.Reversible || s.Disruptive || !strings.Contains(s.Summary, "no member restarts") || !hasGate(s, plan.GateCompactionApplied, plan.After) {
					t.Errorf("step = %+v", s)
				}
			},
		},
		{
			name:    "a longer retention keeps more: reversible",
			desired: etcdSpec(t, 3, "3.5.21", "compaction: {mode: periodic, retention: 2h}"), observed: etcdLive(3, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"configure-compaction"},
			check: func(t *testing.T, p plan.Plan) {
				if !p.Steps[0].Reversible || p.Steps[0].Params.EtcdConfigureCompaction.From.Retention != "1h" {
					t.Errorf("step = %+v", p.Steps[0])
				}
			},
		},
		{
			name:    "another mode cannot be compared: not reversible",
			desired: etcdSpec(t, 3, "3.5.21", "compaction: {mode: revision, retention: 100000}"), observed: etcdLive(3, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"configure-compaction"},
			check: func(t *testing.T, p plan.Plan) {
				if p.Steps[0].Reversible {
					t.Errorf("step = %+v", p.Steps[0])
				}
			},
		},
		{
			name: "the policy the rendered config sets: converged", desired: etcdSpec(t, 3, "3.5.21", "compaction: {mode: periodic, retention: 1h}"),
			observed: etcdLive(3, "3.5.21", 0), status: plan.StatusConverged,
		},
		{
			name:    "a compaction change rides in no other step: it is a step of its own beside a scale-out",
			desired: etcdSpec(t, 5, "3.5.21", "compaction: {mode: revision, retention: 10000}"), observed: etcdLive(3, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"configure-compaction", "etcd-add-3", "etcd-add-4"},
		},
	})
}

func TestEtcdSpaceQuotaPlans(t *testing.T) {
	raised := quotaRevision("4294967296")
	runCases(t, []planCase{
		{
			name:    "a raised quota is a rolling restart, the first step changing the config and the template",
			desired: etcdSpec(t, 3, "3.5.21", "spaceQuota: 4Gi"), observed: etcdLive(3, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"restart-2-" + raised, "restart-1-" + raised, "restart-0-" + raised},
			check: func(t *testing.T, p plan.Plan) {
				first := p.Steps[0].Params.RestartMember.Template
				if first == nil || first.SpaceQuota != "4294967296" || first.Revision != raised {
					t.Errorf("template = %+v", first)
				}
				if p.Steps[1].Params.RestartMember.Template != nil || !strings.Contains(p.Steps[0].Summary, "space quota 2Gi -> 4Gi") {
					t.Errorf("steps = %+v", p.Steps)
				}
			},
		},
		{
			name:    "etcd's default written out, as a cluster created with it renders it: converged",
			desired: etcdSpec(t, 3, "3.5.21"), observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.SpaceQuota = "2147483648" }),
			status: plan.StatusConverged,
		},
		{
			name:    "back to the default: a restart that renders etcd's default, under the revision a cluster without a quota has",
			desired: etcdSpec(t, 3, "3.5.21"), observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.SpaceQuota = "4294967296" }),
			status: plan.StatusPlanned, steps: []string{"restart-2-" + quotaRevision(""), "restart-1-" + quotaRevision(""), "restart-0-" + quotaRevision("")},
			check: func(t *testing.T, p plan.Plan) {
				tc := p.Steps[0].Params.RestartMember.Template
				if tc.SpaceQuota != "2147483648" || tc.Revision != contract.TemplateRevisionOf(contract.Resources{}, nil) {
					t.Errorf("steps = %v, template %+v", stepIDs(p), tc)
				}
			},
		},
		{
			name:    "a restart under way after the config changed: the rest of it",
			desired: etcdSpec(t, 3, "3.5.21", "spaceQuota: 4Gi"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) {
				c.SpaceQuota, c.StatefulSet.TemplateRevision, c.StatefulSet.UpdatePartition = "4294967296", raised, 2
				c.Members[2].TemplateRevision = raised
			}),
			status: plan.StatusPlanned, steps: []string{"restart-1-" + raised, "restart-0-" + raised},
		},
		{
			name:     "a lower quota the data in use does not fit below is refused",
			desired:  etcdSpec(t, 3, "3.5.21", "spaceQuota: 100Mi"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[1].DBSize, c.Members[1].DBSizeInUse = 200<<20, 90<<20 }),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdSpaceQuotaBelowData},
			check: func(t *testing.T, p plan.Plan) {
				if r := p.Refusals[0].Reason; !strings.Contains(r, "e-1 holds 90Mi in use") || !strings.Contains(r, "at least 113Mi") {
					t.Errorf("reason = %s", r)
				}
			},
		},
		{
			name:     "a lower quota the data fits below is planned",
			desired:  etcdSpec(t, 3, "3.5.21", "spaceQuota: 1Gi"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[1].DBSize, c.Members[1].DBSizeInUse = 900<<20, 90<<20 }),
			status:   plan.StatusPlanned, steps: []string{"restart-2-" + quotaRevision("1073741824"), "restart-1-" + quotaRevision("1073741824"), "restart-0-" + quotaRevision("1073741824")},
		},
	})
}

func TestEtcdAlarmsHoldThePlan(t *testing.T) {
	raised := quotaRevision("4294967296")
	runCases(t, []planCase{
		{
			name:    "NOSPACE holds a scale-out and says what happens",
			desired: etcdSpec(t, 5, "3.5.21"), observed: alarm(etcdLive(3, "3.5.21", 0), contract.EtcdAlarmNoSpace, "e-1"),
			status: plan.StatusWaiting, waiting: "etcd raised NOSPACE on e-1: the cluster takes no writes. The runtime compacts",
		},
		{
			name: "NOSPACE holds an upgrade", desired: etcdSpec(t, 3, "3.5.22"), observed: alarm(etcdLive(3, "3.5.21", 0), contract.EtcdAlarmNoSpace, "e-0"),
			status: plan.StatusWaiting, waiting: "Member restarts and upgrades wait",
		},
		{
			name:    "NOSPACE: a quota raise fixes it and is planned alone, the scale-out waits",
			desired: etcdSpec(t, 5, "3.5.21", "spaceQuota: 4Gi"), observed: alarm(etcdLive(3, "3.5.21", 0), contract.EtcdAlarmNoSpace, "e-1"),
			status: plan.StatusPlanned, steps: []string{"restart-2-" + raised, "restart-1-" + raised, "restart-0-" + raised},
		},
		{
			name:    "NOSPACE: the rest of a quota raise under way",
			desired: etcdSpec(t, 3, "3.5.21", "spaceQuota: 4Gi"),
			observed: alarm(with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) {
				c.SpaceQuota, c.StatefulSet.TemplateRevision, c.StatefulSet.UpdatePartition = "4294967296", raised, 2
				c.Members[2].TemplateRevision = raised
			}), contract.EtcdAlarmNoSpace, "e-0"),
			status: plan.StatusPlanned, steps: []string{"restart-1-" + raised, "restart-0-" + raised},
		},
		{
			name:    "NOSPACE on a cluster that never compacted: turning compaction on fixes it",
			desired: etcdSpec(t, 3, "3.5.21"), observed: alarm(noCompaction(etcdLive(3, "3.5.21", 0)), contract.EtcdAlarmNoSpace, "e-2"),
			status: plan.StatusPlanned, steps: []string{"configure-compaction"},
			check: func(t *testing.T, p plan.Plan) {
				if !strings.Contains(p.Steps[0].Summary, "planned while NOSPACE is raised") {
					t.Errorf("summary = %s", p.Steps[0].Summary)
				}
			},
		},
		{
			name:    "NOSPACE: a policy that keeps more fixes nothing; the cluster waits",
			desired: etcdSpec(t, 3, "3.5.21", "compaction: {mode: periodic, retention: 2h}"), observed: alarm(etcdLive(3, "3.5.21", 0), contract.EtcdAlarmNoSpace, "e-2"),
			status: plan.StatusWaiting, waiting: "NOSPACE",
		},
		{
			name: "NOSPACE: volumes still grow", desired: etcdSpec(t, 3, "3.5.21", "storage: 20Gi"),
			observed: alarm(etcdLive(3, "3.5.21", 0), contract.EtcdAlarmNoSpace, "e-2"),
			status:   plan.StatusPlanned, steps: []string{"expand-storage-20gi"},
		},
		{
			name:    "CORRUPT holds everything, a quota raise too, and says what a person does",
			desired: etcdSpec(t, 3, "3.5.21", "spaceQuota: 4Gi"), observed: alarm(etcdLive(3, "3.5.21", 0), contract.EtcdAlarmCorrupt, "e-2"),
			status: plan.StatusWaiting, waiting: "etcd raised CORRUPT on e-2: its data disagrees with the other members' at the same revision. cairn never disarms it",
		},
		{
			name:    "NOSPACE without quorum: the quorum loss is what the plan says",
			desired: etcdSpec(t, 3, "3.5.21", "spaceQuota: 4Gi"),
			observed: alarm(with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) {
				c.Members[1].Role, c.Members[1].Ready, c.Members[2].Role, c.Members[2].Ready = live.RoleUnknown, false, live.RoleUnknown, false
			}), contract.EtcdAlarmNoSpace, "e-0"),
			status: plan.StatusWaiting, waiting: "quorum is lost",
		},
	})
}
