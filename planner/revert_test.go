package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// rolledOut is cluster c with its template at version and the partition
// at k: the members from k up run version.
func rolledOut(c *live.Cluster, version string, k int) *live.Cluster {
	c.StatefulSet.Version, c.StatefulSet.UpdatePartition = version, k
	for i := k; i < len(c.Members); i++ {
		c.Members[i].Version = version
	}
	return c
}

// A spec set back mid-rollout moves the members already moved back, one
// at a time, and never first finishes the rollout it reverts.
func TestRevertingIsARollback(t *testing.T) {
	cases := []struct {
		name     string
		plan     plan.Plan
		steps    []string
		refusals []string
	}{
		{name: "PostgreSQL: the one upgraded replica goes back",
			plan:  kinds.PlanCluster(pgSpec(t, 3, "14.5"), rolledOut(pgLive(3, "14.5", 0), "14.9", 2), nil),
			steps: []string{"upgrade-2-to-14.5"}},
		{name: "PostgreSQL: an upgraded primary hands over to a member at the old version first",
			plan:  kinds.PlanCluster(pgSpec(t, 3, "14.5"), rolledOut(pgLive(3, "14.5", 2), "14.9", 1), nil),
			steps: []string{"switchover-2-to-0-for-14.5", "upgrade-2-to-14.5", "upgrade-1-to-14.5"}},
		{name: "etcd: within a minor hop, before the cluster version is raised",
			plan:  kinds.PlanCluster(etcdSpec(t, 3, "3.5.35"), with(rolledOut(etcdLive(3, "3.5.35", 0), "3.6.16", 1), func(c *live.Cluster) { c.ClusterVersion = "3.5" }), nil),
			steps: []string{"upgrade-2-to-3.5.35", "upgrade-1-to-3.5.35"}},
		{name: "etcd: half-way back, a member below the partition one minor ahead is moved, not refused",
			plan: kinds.PlanCluster(etcdSpec(t, 3, "3.5.35"), with(rolledOut(etcdLive(3, "3.5.35", 0), "3.5.35", 2), func(c *live.Cluster) {
				c.ClusterVersion, c.Members[1].Version = "3.5", "3.6.16"
			}), nil),
			steps: []string{"upgrade-1-to-3.5.35"}},
		{name: "etcd: once the cluster version is raised, going back is a downgrade (etcd 3.6 and later)",
			plan:  kinds.PlanCluster(etcdSpec(t, 3, "3.5.35"), with(rolledOut(etcdLive(3, "3.6.16", 0), "3.6.16", 0), func(c *live.Cluster) { c.ClusterVersion = "3.6" }), nil),
			steps: []string{"etcd-downgrade-to-3.5", "downgrade-2-to-3.5.35", "downgrade-1-to-3.5.35", "downgrade-0-to-3.5.35"}},
		{name: "etcd: once the cluster version is raised to 3.5 there is no going back",
			plan:     kinds.PlanCluster(etcdSpec(t, 3, "3.4.37"), with(rolledOut(etcdLive(3, "3.5.35", 0), "3.5.35", 0), func(c *live.Cluster) { c.ClusterVersion = "3.5" }), nil),
			refusals: []string{RuleEtcdDowngrade}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.plan
			if !slices.Equal(stepIDs(p), tc.steps) && len(tc.steps)+len(p.Steps) > 0 {
				t.Errorf("steps %v, want %v (refusals %v, waiting %v)", stepIDs(p), tc.steps, p.Refusals, p.Waiting)
			}
			if got := refusalRules(p); !slices.Equal(got, tc.refusals) {
				t.Errorf("refusals %v, want %v", p.Refusals, tc.refusals)
			}
			for _, s := range p.Steps {
				if s.Kind == plan.UpgradeMember && !strings.HasPrefix(s.Summary, "Downgrade") {
					t.Errorf("%s: %q; a move back is no upgrade", s.ID, s.Summary)
				}
				if s.Kind == plan.UpgradeMember && !s.Reversible {
					t.Errorf("%s: moving back is reversible", s.ID)
				}
			}
		})
	}
}

// TestRevertConverges: from every point of a PostgreSQL rollout, setting
// the spec back converges to the old version with the invariants held,
// and every reversible step's rollback (set the spec back) leads to a
// plan that converges too.
func TestRevertConverges(t *testing.T) {
	for primary := range 3 {
		for k := 1; k <= 2; k++ {
			c := rolledOut(pgLive(3, "14.5", primary), "14.9", k)
			converge(t, convergenceCase{desired: pgSpec(t, 3, "14.5"), observed: c})
			converge(t, convergenceCase{desired: pgSpec(t, 3, "14.9"), observed: clone(c)})
		}
	}
}
