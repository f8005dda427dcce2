package planner

import (
	"slices"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// A cluster rendered before its NetworkPolicy gets it by one reviewed,
// disruptive step, after every other change; one that has it, none; an
// unknown mode is a person's to look at.
func TestNetworkPolicyPlans(t *testing.T) {
	cases := []struct {
		name      string
		desired   spec.Cluster
		observed  *live.Cluster
		wantSteps []string
		wantRule  string
	}{
		{name: "etcd rendered before the policy", desired: etcdSpec(t, 3, "3.5.9"), observed: etcdLive(3, "3.5.9", 0),
			wantSteps: []string{"network-restrict"}},
		{name: "etcd growing", desired: etcdSpec(t, 5, "3.5.9"), observed: etcdLive(3, "3.5.9", 0),
			wantSteps: []string{"etcd-add-3", "etcd-add-4", "network-restrict"}},
		{name: "PostgreSQL rendered before the policy and TLS", desired: pgSpec(t, 3, "14.5"), observed: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.TLS = "" }),
			wantSteps: []string{"tls-accept", "tls-require", "network-restrict"}},
		{name: "PostgreSQL rendered before the policy", desired: pgSpec(t, 3, "14.5"), observed: pgLive(3, "14.5", 0),
			wantSteps: []string{"network-restrict"}},
		{name: "unknown mode", desired: pgSpec(t, 3, "14.5"), observed: pgLive(3, "14.5", 0), wantRule: RuleUnknownNetwork},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := with(tc.observed, func(c *live.Cluster) {
				c.Network = ""
				if tc.wantRule != "" {
					c.Network = "sometimes"
				}
			})
			p := kinds.PlanCluster(tc.desired, obs, nil)
			if tc.wantRule != "" {
				if got := refusalRules(p); !slices.Contains(got, tc.wantRule) {
					t.Fatalf("refusals %v, want %s", got, tc.wantRule)
				}
				return
			}
			if got := stepIDs(p); !slices.Equal(got, tc.wantSteps) {
				t.Fatalf("steps %v, want %v", got, tc.wantSteps)
			}
			s := step(t, p, "network-restrict")
			want := plan.RestrictNetworkParams{Policy: obs.Name + "-members", ClientLabel: "access.cairn.dev/" + obs.Name}
			if s.Kind != plan.RestrictNetwork || !s.Disruptive || !s.Reversible || s.Params.RestrictNetwork == nil || *s.Params.RestrictNetwork != want {
				t.Fatalf("step %+v, want disruptive, reversible, %+v", s, want)
			}

			// Once rendered, nothing more.
			obs.Network = contract.NetworkRestricted
			if got := stepIDs(kinds.PlanCluster(tc.desired, obs, nil)); slices.Contains(got, "network-restrict") {
				t.Fatalf("restricted: steps %v", got)
			}
		})
	}
}

// A maintenance window holds the step, as every disruptive one.
func TestNetworkPolicyWaitsForTheWindow(t *testing.T) {
	desired := pgSpec(t, 3, "14.5", window)
	p := kinds.PlanCluster(desired, with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.Network = "" }), nil)
	s := step(t, p, "network-restrict")
	if len(s.Gates) == 0 || s.Gates[0].Kind != plan.GateMaintenanceWindow {
		t.Fatalf("gates %+v, want the maintenance window first", s.Gates)
	}
}
