package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// A member that is not ready does not block the step that fixes it; one
// the plan keeps still makes it wait.
func TestNotReadyMembersDoNotBlockTheirFix(t *testing.T) {
	down := func(c *live.Cluster, ords ...int) *live.Cluster {
		for _, o := range ords {
			c.Members[o].Ready, c.Members[o].Role = false, live.RoleUnknown
		}
		return c
	}
	cases := []struct {
		name    string
		plan    plan.Plan
		status  plan.Status
		steps   []string
		waiting string
		check   func(t *testing.T, p plan.Plan)
	}{
		{
			name: "a dead replica the spec removes is removed", plan: kinds.PlanCluster(pgSpec(t, 2, "14.5"), down(pgLive(3, "14.5", 0), 2), nil),
			status: plan.StatusPlanned, steps: []string{"scale-in-2"},
			check: func(t *testing.T, p plan.Plan) {
				if g := p.Steps[0].Gates[0]; g.Kind != plan.GateClusterHealthy || g.Below != 2 {
					t.Errorf("before gate %+v: only the members that stay are judged", g)
				}
			},
		},
		{
			name: "a dead replica the spec keeps makes the plan wait", plan: kinds.PlanCluster(pgSpec(t, 3, "14.9"), down(pgLive(3, "14.5", 0), 2), nil),
			status: plan.StatusWaiting, waiting: "pg-2 is ready",
		},
		{
			name: "a dead etcd member is removed while the others keep quorum", plan: kinds.PlanCluster(etcdSpec(t, 3, "3.5.21"), down(etcdLive(5, "3.5.21", 0), 4), nil),
			status: plan.StatusPlanned, steps: []string{"etcd-remove-4", "scale-in-4", "etcd-remove-3", "scale-in-3"},
		},
		{
			name: "a stuck learner the spec no longer wants is removed", plan: kinds.PlanCluster(etcdSpec(t, 3, "3.5.21"), with(etcdLive(4, "3.5.21", 0), func(c *live.Cluster) {
				c.Members[3].Ready, c.Members[3].Role = false, live.RoleLearner
			}), nil),
			status: plan.StatusPlanned, steps: []string{"etcd-remove-3", "scale-in-3"},
		},
		{
			name: "without quorum nothing is removed", plan: kinds.PlanCluster(etcdSpec(t, 1, "3.5.21"), down(etcdLive(3, "3.5.21", 0), 1, 2), nil),
			status: plan.StatusWaiting, waiting: "quorum is lost",
		},
		{
			name: "a volume is grown while a member is down (its disk may be full)", plan: kinds.PlanCluster(pgSpec(t, 3, "14.5", "storage: 20Gi"), down(pgLive(3, "14.5", 0), 1), nil),
			status: plan.StatusPlanned, steps: []string{"expand-storage-20gi"},
			check: func(t *testing.T, p plan.Plan) {
				if hasGate(p.Steps[0], plan.GateClusterHealthy, plan.Before) || !strings.Contains(p.Steps[0].Summary, "pg-1 is ready") {
					t.Errorf("%+v", p.Steps[0])
				}
			},
		},
		{
			name: "etcd volumes grow while quorum is lost", plan: kinds.PlanCluster(etcdSpec(t, 3, "3.5.21", "storage: 16Gi"), down(etcdLive(3, "3.5.21", 0), 1, 2), nil),
			status: plan.StatusPlanned, steps: []string{"expand-storage-16gi"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.plan
			if p.Status != tc.status || !slices.Equal(stepIDs(p), tc.steps) && len(tc.steps)+len(p.Steps) > 0 {
				t.Fatalf("%s %v, want %s %v (waiting %v, refusals %v)", p.Status, stepIDs(p), tc.status, tc.steps, p.Waiting, p.Refusals)
			}
			if tc.waiting != "" && !strings.Contains(p.Waiting[0].Description, tc.waiting) {
				t.Errorf("waiting %v, want %q", p.Waiting, tc.waiting)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}
