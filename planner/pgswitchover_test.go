package planner

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// switchoverTo is the spec.switchover line of a request.
func switchoverTo(to, id string) string { return "switchover: {to: " + to + ", id: " + id + "}" }

func TestRequestedSwitchover(t *testing.T) {
	noted := func(want string) func(*testing.T, plan.Plan) {
		return func(t *testing.T, p plan.Plan) {
			t.Helper()
			if len(p.Notes) != 1 || p.Notes[0].Field != "spec.switchover" || !strings.Contains(p.Notes[0].Reason, want) {
				t.Errorf("notes = %+v, want one on spec.switchover saying %q", p.Notes, want)
			}
		}
	}
	runCases(t, []planCase{
		{
			name: "a request is one switchover step with its gates", desired: pgSpec(t, 3, "14.5", switchoverTo("pg-2", "maint-1")), observed: pgLive(3, "14.5", 0),
			status: plan.StatusPlanned, steps: []string{"switchover-to-2-maint-1"},
			check: func(t *testing.T, p plan.Plan) {
				s := p.Steps[0]
				sw := s.Params.PostgresSwitchover
				if s.Kind != plan.PostgresSwitchover || sw.From != "pg-0" || sw.To != "pg-2" || sw.Request != "maint-1" || !s.Disruptive || !s.Reversible {
					t.Errorf("%+v %+v", s, sw)
				}
				for _, g := range []struct {
					kind plan.GateKind
					when plan.Phase
				}{{plan.GateClusterHealthy, plan.Before}, {plan.GateReplicaStreaming, plan.Before}, {plan.GatePrimary, plan.After}, {plan.GateClusterHealthy, plan.After}} {
					if !hasGate(s, g.kind, g.when) {
						t.Errorf("no %s gate %s: %+v", g.kind, g.when, s.Gates)
					}
				}
				if !strings.Contains(s.Summary, "from pg-0 to pg-2") || !strings.Contains(s.Summary, "request maint-1") {
					t.Errorf("summary: %s", s.Summary)
				}
				if len(p.Notes) != 0 {
					t.Errorf("notes: %+v", p.Notes)
				}
			},
		},
		{
			name: "the target is the primary already: nothing, and the plan says so", desired: pgSpec(t, 3, "14.5", switchoverTo("pg-1", "m")), observed: pgLive(3, "14.5", 1),
			status: plan.StatusConverged, check: noted("pg-1 is the primary already"),
		},
		{
			name: "served: not planned again after a later failover", desired: pgSpec(t, 3, "14.5", switchoverTo("pg-1", "m")),
			observed: with(pgLive(3, "14.5", 2), func(c *live.Cluster) { c.SwitchoverServed = "m" }),
			status:   plan.StatusConverged, check: noted("request m is served"),
		},
		{
			name: "a new id after one served is planned", desired: pgSpec(t, 3, "14.5", switchoverTo("pg-1", "m2")),
			observed: with(pgLive(3, "14.5", 2), func(c *live.Cluster) { c.SwitchoverServed = "m" }),
			status:   plan.StatusPlanned, steps: []string{"switchover-to-1-m2"},
		},
		{
			name: "before any other change: then the minor upgrade goes on from the new primary", desired: pgSpec(t, 3, "14.9", switchoverTo("pg-2", "m")), observed: pgLive(3, "14.5", 0),
			status: plan.StatusPlanned, steps: []string{"switchover-to-2-m", "switchover-2-to-0-for-14.9", "upgrade-2-to-14.9", "upgrade-1-to-14.9", "switchover-0-to-1-for-14.9", "upgrade-0-to-14.9"},
		},
		{
			name: "before a scale-in of other members", desired: pgSpec(t, 2, "14.5", switchoverTo("pg-1", "m")), observed: pgLive(3, "14.5", 0),
			status: plan.StatusPlanned, steps: []string{"switchover-to-1-m", "scale-in-2"},
		},
		{
			name: "a member the plan adds: after it is added", desired: pgSpec(t, 4, "14.5", switchoverTo("pg-3", "m")), observed: pgLive(3, "14.5", 0),
			status: plan.StatusPlanned, steps: []string{"pg-add-3", "switchover-to-3-m"},
			check: func(t *testing.T, p plan.Plan) {
				if !hasGate(p.Steps[1], plan.GateReplicaStreaming, plan.Before) {
					t.Errorf("%+v", p.Steps[1].Gates)
				}
			},
		},
		{
			name: "the longest id on the highest member: a valid step ID", desired: pgSpec(t, 16, "14.5", switchoverTo("pg-15", strings.Repeat("a", 40))), observed: pgLive(16, "14.5", 0),
			status: plan.StatusPlanned, steps: []string{"switchover-to-15-" + strings.Repeat("a", 40)},
		},
		{
			name: "a step in flight: wait, no switchover on top", desired: pgSpec(t, 3, "14.5", switchoverTo("pg-1", "m")),
			observed: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.Members[1].Ready = false }),
			status:   plan.StatusWaiting, waiting: "pg-1",
		},
		{
			name: "no primary (a failover under way): wait", desired: pgSpec(t, 3, "14.5", switchoverTo("pg-1", "m")),
			observed: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.Members[0].Role = live.RoleReplica }),
			status:   plan.StatusWaiting, waiting: "has a primary",
		},
	})
}

// TestRequestedSwitchoverConverges carries the request out in the
// simulator, with and without other changes: each ends in an empty plan
// with the target primary, and re-planning after the last step keeps the
// request served.
func TestRequestedSwitchoverConverges(t *testing.T) {
	for name, c := range map[string]convergenceCase{
		"alone":                        {desired: pgSpec(t, 3, "14.5", switchoverTo("pg-1", "a")), observed: pgLive(3, "14.5", 0)},
		"with scale-out to the target": {desired: pgSpec(t, 5, "14.5", switchoverTo("pg-4", "a")), observed: pgLive(3, "14.5", 0)},
		"with scale-in":                {desired: pgSpec(t, 2, "14.5", switchoverTo("pg-1", "a")), observed: pgLive(3, "14.5", 2)},
		"with a minor upgrade":         {desired: pgSpec(t, 3, "14.9", switchoverTo("pg-2", "a")), observed: pgLive(3, "14.5", 0)},
	} {
		t.Run(name, func(t *testing.T) {
			if n := converge(t, c); n == 0 {
				t.Fatal("nothing planned")
			}
		})
	}
}

// TestServedRequestSurvivesAFailover: once the requested switchover ran
// and a failover moved the primary away, the plan stays empty.
func TestServedRequestSurvivesAFailover(t *testing.T) {
	desired := pgSpec(t, 3, "14.5", switchoverTo("pg-1", "a"))
	state := pgLive(3, "14.5", 0)
	p := kinds.PlanCluster(desired, state, nil)
	if len(p.Steps) != 1 {
		t.Fatalf("steps %v", stepIDs(p))
	}
	state = apply(t, state, desired, p.Steps[0])
	if state.SwitchoverServed != "a" || state.Members[1].Role != live.RolePrimary {
		t.Fatalf("after the step: served %q, roles %+v", state.SwitchoverServed, state.Members)
	}
	// The runtime fails over to pg-2.
	state.Members[1].Role, state.Members[2].Role = live.RoleReplica, live.RolePrimary
	if p := kinds.PlanCluster(desired, state, nil); p.Status != plan.StatusConverged {
		t.Fatalf("after a failover: %s %v", p.Status, stepIDs(p))
	}
}
