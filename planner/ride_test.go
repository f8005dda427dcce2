package planner

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// disruptions are what a plan taken to its end costs: member restarts
// (each UpgradeMember and RestartMember step restarts one) and
// switchovers.
type disruptions struct{ restarts, switchovers int }

// walk takes the plan of desired from obs to its end in the simulator,
// checking every state as the convergence test does, and counts what it
// cost.
func walk(t *testing.T, desired spec.Cluster, obs *live.Cluster) disruptions {
	t.Helper()
	var d disruptions
	state := obs
	for range 200 {
		p := kinds.PlanCluster(desired, state, nil)
		if p.Status != plan.StatusPlanned {
			if p.Status != plan.StatusConverged {
				t.Fatalf("plan %s: refusals %v, waiting %v", p.Status, p.Refusals, p.Waiting)
			}
			checkConverged(t, desired, state)
			return d
		}
		s := p.Steps[0]
		switch s.Kind {
		case plan.UpgradeMember, plan.RestartMember:
			d.restarts++
		case plan.PostgresSwitchover:
			d.switchovers++
		}
		checkPartial(t, desired, state, s)
		next := apply(t, state, desired, s)
		if err := checkInvariants(state, s, next); err != nil {
			t.Fatalf("step %s: %v", s.ID, err)
		}
		state = next
	}
	t.Fatal("no convergence after 200 steps")
	return d
}

// Fewest disruptions: a minor upgrade with any restart-causing changes
// that are safe to combine (parameters that need a restart, resources,
// read-only roots, raised hot-standby parameters) runs as one rolling
// pass: as many restarts and switchovers as the upgrade alone. Changes
// that must stay apart (hot-standby parameters lowered, which restart the
// primary first) cost a pass of their own.
func TestIndependentChangesShareOneRollingPass(t *testing.T) {
	combinable := [][]string{
		{"postgresql: {parameters: {shared_buffers: 256MB}}"},
		{"resources: {requests: {cpu: '1'}, limits: {memory: 2Gi}}"},
		{"postgresql: {parameters: {shared_buffers: 256MB, work_mem: 8MB, max_connections: 200}}", "resources: {requests: {cpu: '0.5', memory: 1024Mi}}"},
	}
	for _, n := range []int{1, 2, 3, 5} {
		for primary := range n {
			for _, harden := range []bool{false, true} {
				base := func() *live.Cluster {
					return with(pgLive(n, "15.4", primary), func(c *live.Cluster) { c.StatefulSet.ReadOnlyRoot = !harden })
				}
				// The upgrade alone, on a template that needs nothing else.
				alone := walk(t, pgSpec(t, n, "15.10"), pgLive(n, "15.4", primary))
				for i, extra := range combinable {
					t.Run(fmt.Sprintf("%d members/primary %d/harden %v/changes %d", n, primary, harden, i), func(t *testing.T) {
						got := walk(t, pgSpec(t, n, "15.10", extra...), base())
						if got != alone {
							t.Errorf("upgrade with %v: %d restarts, %d switchovers; the upgrade alone: %d, %d", extra, got.restarts, got.switchovers, alone.restarts, alone.switchovers)
						}
						if got.restarts != n {
							t.Errorf("%d restarts for %d members", got.restarts, n)
						}
					})
				}
				t.Run(fmt.Sprintf("%d members/primary %d/harden %v/lowered hot-standby parameters stay apart", n, primary, harden), func(t *testing.T) {
					obs := with(base(), func(c *live.Cluster) {
						c.Parameters = map[string]string{"max_connections": "'300'"}
						for i := range c.Members {
							c.Members[i].ConfigRevision = ""
						}
					})
					got := walk(t, pgSpec(t, n, "15.10", "postgresql: {parameters: {max_connections: 100}}"), obs)
					if n > 1 && got.restarts != 2*n {
						t.Errorf("%d restarts; want %d, two passes", got.restarts, 2*n)
					}
				})
			}
		}
	}
}

// The pull request of the pass's first step says every change it brings,
// and each member the upgrade restarts is gated on the new template.
func TestCombinedPassSaysEachChange(t *testing.T) {
	p := kinds.PlanCluster(pgSpec(t, 3, "15.10", "postgresql: {parameters: {shared_buffers: 256MB}}", "resources: {requests: {cpu: '1'}}"),
		with(pgLive(3, "15.4", 0), func(c *live.Cluster) { c.StatefulSet.ReadOnlyRoot = false }), nil)
	want := []string{"upgrade-2-to-15.10", "upgrade-1-to-15.10", "switchover-0-to-1-for-15.10", "upgrade-0-to-15.10"}
	if got := stepIDs(p); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("steps %v, want %v", got, want)
	}
	first := p.Steps[0]
	tc := first.Params.UpgradeMember.Template
	if tc == nil || tc.Parameters == nil || tc.Resources == nil || !tc.ReadOnlyRoot {
		t.Fatalf("first step's template %+v", tc)
	}
	for _, say := range []string{"from 15.4 to 15.10", "also changes the pod template", "resources cpu request 1", "read-only root filesystems", "shared_buffers = '256MB'", "each member restarts once"} {
		if !strings.Contains(first.Summary, say) {
			t.Errorf("summary %q does not say %q", first.Summary, say)
		}
	}
	for _, s := range p.Steps {
		if s.Kind == plan.UpgradeMember && !hasGate(s, plan.GateMemberRestarted, plan.After) {
			t.Errorf("%s is not gated on the new template revision", s.ID)
		}
		if s.Kind == plan.UpgradeMember && s.ID != first.ID && s.Params.UpgradeMember.Template != nil {
			t.Errorf("%s changes the template again", s.ID)
		}
	}
}

// A new cluster records its pod template's revision at creation, so that
// reverting its first rolling restart restarts only the members that
// restart took, never those that still run the creation's template.
func TestRevertingANewClustersFirstRestart(t *testing.T) {
	cases := []struct {
		name            string
		created, edited spec.Cluster
	}{
		{"PostgreSQL resources", pgSpec(t, 3, "15.4"), pgSpec(t, 3, "15.4", "resources: {requests: {cpu: '1'}}")},
		{"PostgreSQL parameters that need a restart", pgSpec(t, 3, "15.4", "postgresql: {parameters: {shared_buffers: 128MB}}"), pgSpec(t, 3, "15.4", "postgresql: {parameters: {shared_buffers: 256MB}}")},
		{"PostgreSQL resources and parameters, five members", pgSpec(t, 5, "16.2", "resources: {requests: {memory: 1Gi}}"), pgSpec(t, 5, "16.2", "resources: {requests: {memory: 2Gi}}", "postgresql: {parameters: {max_wal_size: 2GB, shared_buffers: 1GB}}")},
		{"etcd resources", etcdSpec(t, 3, "3.5.21"), etcdSpec(t, 3, "3.5.21", "resources: {requests: {cpu: '1'}}")},
		{"etcd space quota", etcdSpec(t, 5, "3.6.16", "spaceQuota: 3Gi"), etcdSpec(t, 5, "3.6.16", "spaceQuota: 4Gi")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			create := kinds.PlanCluster(tc.created, nil, nil).Steps[0]
			if create.Params.CreateCluster.TemplateRevision == "" {
				t.Fatal("the create step records no template revision")
			}
			state := apply(t, nil, tc.created, create)
			state.Bootstrap = "existing"
			first := kinds.PlanCluster(tc.edited, state, nil)
			var restarted int
			for restarted < 1 || first.Steps[0].Kind == plan.PostgresSwitchover {
				s := first.Steps[0]
				state = apply(t, state, tc.edited, s)
				if s.Kind == plan.RestartMember {
					restarted++
				}
				first = kinds.PlanCluster(tc.edited, state, nil)
			}
			back := kinds.PlanCluster(tc.created, state, nil)
			var restarts []string
			for _, s := range back.Steps {
				if s.Kind == plan.RestartMember {
					restarts = append(restarts, s.Params.RestartMember.Member)
					if rev := s.Params.Template(); rev != nil && rev.Revision != create.Params.CreateCluster.TemplateRevision {
						t.Errorf("the way back restarts for revision %s, not the creation's %s", rev.Revision, create.Params.CreateCluster.TemplateRevision)
					}
				}
			}
			top := contract.MemberName(tc.created.Ref().Name, tc.created.Common().Members-1)
			if strings.Join(restarts, " ") != top {
				t.Errorf("reverting restarts %v (plan %v); want only %s, the member the first restart took", restarts, stepIDs(back), top)
			}
			converge(t, convergenceCase{desired: tc.created, observed: state})
		})
	}
}

// etcd too: an upgrade and a template change (resources, a space quota,
// read-only roots) share the upgrade's restarts, over one hop or several;
// a downgrade takes none along.
func TestEtcdChangesShareTheUpgradesRestarts(t *testing.T) {
	const backup = "backup: {schedule: '0 3 * * *', storageLocation: 's3://bkp/e'}"
	extras := [][]string{
		{"resources: {requests: {cpu: '1'}}"},
		{"spaceQuota: 4Gi"},
		{"resources: {requests: {memory: 2Gi}}", "spaceQuota: 3Gi"},
	}
	for _, n := range []int{1, 3, 5} {
		for _, hop := range [][2]string{{"3.5.21", "3.5.26"}, {"3.5.26", "3.6.16"}, {"3.4.37", "3.6.16"}} {
			for _, harden := range []bool{false, true} {
				base := func() *live.Cluster {
					return etcdBacked(with(etcdLive(n, hop[0], 0), func(c *live.Cluster) { c.StatefulSet.ReadOnlyRoot = !harden }), "")
				}
				// The upgrade alone, on a template that needs nothing else.
				alone := walk(t, etcdSpec(t, n, hop[1], backup), etcdBacked(etcdLive(n, hop[0], 0), ""))
				for i, extra := range extras {
					t.Run(fmt.Sprintf("%d members/%s->%s/harden %v/changes %d", n, hop[0], hop[1], harden, i), func(t *testing.T) {
						got := walk(t, etcdSpec(t, n, hop[1], append([]string{backup}, extra...)...), base())
						if got != alone {
							t.Errorf("upgrade with %v: %d restarts; the upgrade alone: %d", extra, got.restarts, alone.restarts)
						}
					})
				}
			}
		}
	}
	t.Run("a downgrade takes no template change along", func(t *testing.T) {
		p := kinds.PlanCluster(etcdSpec(t, 3, "3.5.35", backup, "spaceQuota: 4Gi"), etcdBacked(with(etcdLive(3, "3.6.16", 0), func(c *live.Cluster) { c.ClusterVersion = "3.6" }), ""), nil)
		for _, s := range p.Steps {
			if s.Params.UpgradeMember != nil && s.Params.UpgradeMember.Template != nil {
				t.Errorf("%s carries a template change: %v", s.ID, stepIDs(p))
			}
		}
		if !slices.ContainsFunc(p.Steps, func(s plan.Step) bool { return s.Kind == plan.RestartMember }) {
			t.Errorf("no restart of its own for the quota: %v", stepIDs(p))
		}
	})
}
