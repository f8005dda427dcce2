package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// A runtime rendered before cairn gave it a read-only root gets one by a
// reviewed step of its own, after every other change and not disruptive
// (no member restarts); one that has it, none; a new cluster has it from
// its create step, so its plan never holds the step.
func TestRuntimeReadOnlyRootPlans(t *testing.T) {
	cases := []struct {
		name      string
		desired   spec.Cluster
		observed  *live.Cluster
		wantSteps []string
	}{
		{name: "etcd", desired: etcdSpec(t, 3, "3.5.9"), observed: etcdLive(3, "3.5.9", 0),
			wantSteps: []string{"runtime-read-only-root"}},
		{name: "etcd growing", desired: etcdSpec(t, 5, "3.5.9"), observed: etcdLive(3, "3.5.9", 0),
			wantSteps: []string{"etcd-add-3", "etcd-add-4", "runtime-read-only-root"}},
		{name: "etcd rendered before its NetworkPolicy", desired: etcdSpec(t, 3, "3.5.9"), observed: with(etcdLive(3, "3.5.9", 0), func(c *live.Cluster) { c.Network = "" }),
			wantSteps: []string{"network-restrict", "runtime-read-only-root"}},
		{name: "PostgreSQL", desired: pgSpec(t, 3, "14.5"), observed: pgLive(3, "14.5", 0),
			wantSteps: []string{"runtime-read-only-root"}},
		{name: "PostgreSQL scaling in", desired: pgSpec(t, 2, "14.5"), observed: pgLive(3, "14.5", 0),
			wantSteps: []string{"scale-in-2", "runtime-read-only-root"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := with(tc.observed, func(c *live.Cluster) { c.Runtime.ReadOnlyRoot = false })
			p := kinds.PlanCluster(tc.desired, obs, nil)
			if got := stepIDs(p); !slices.Equal(got, tc.wantSteps) {
				t.Fatalf("steps %v, want %v", got, tc.wantSteps)
			}
			if p.Baseline == nil || p.Baseline.RuntimeReadOnlyRoot {
				t.Fatalf("baseline %+v, want the runtime as it runs (writable)", p.Baseline)
			}
			s := step(t, p, "runtime-read-only-root")
			want := plan.HardenRuntimeParams{Deployment: obs.Name + "-runtime", Writable: []string{"/tmp"}}
			if s.Kind != plan.HardenRuntime || s.Disruptive || !s.Reversible || s.Params.HardenRuntime == nil ||
				s.Params.HardenRuntime.Deployment != want.Deployment || !slices.Equal(s.Params.HardenRuntime.Writable, want.Writable) {
				t.Fatalf("step %+v, want not disruptive, reversible, %+v", s, want)
			}
			if !strings.Contains(s.Summary, "no member restarts") || !strings.Contains(s.Summary, obs.Name+"-runtime") {
				t.Errorf("summary %q, want the Deployment and no member restarts", s.Summary)
			}

			// Once it runs, nothing more, and the base says so.
			obs.Runtime.ReadOnlyRoot = true
			p = kinds.PlanCluster(tc.desired, obs, nil)
			if got := stepIDs(p); slices.Contains(got, "runtime-read-only-root") {
				t.Fatalf("read-only: steps %v", got)
			}
			if !p.Baseline.RuntimeReadOnlyRoot {
				t.Fatalf("baseline %+v, want the runtime as it runs (read-only)", p.Baseline)
			}
		})
	}
}

// A new cluster's plan is its create step and the seal: the create step
// brings the read-only runtime.
func TestNewClustersHaveAReadOnlyRuntime(t *testing.T) {
	for _, c := range []spec.Cluster{etcdSpec(t, 3, "3.5.9"), pgSpec(t, 3, "14.5")} {
		p := kinds.PlanCluster(c, nil, nil)
		if got := stepIDs(p); slices.Contains(got, "runtime-read-only-root") {
			t.Errorf("%s: steps %v", c.Ref().Kind, got)
		}
	}
}

// The step is not disruptive, so a maintenance window does not hold it.
func TestRuntimeReadOnlyRootIgnoresTheWindow(t *testing.T) {
	p := kinds.PlanCluster(pgSpec(t, 3, "14.5", window), with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.Runtime.ReadOnlyRoot = false }), nil)
	for _, g := range step(t, p, "runtime-read-only-root").Gates {
		if g.Kind == plan.GateMaintenanceWindow {
			t.Fatalf("gates %+v, want no maintenance window", g)
		}
	}
}

// A runtime rendered without a memory limit gets cairn's memory request
// and limit by a reviewed step: with the read-only root when that is
// missing too (one step), by a step of its own when the root is already
// read-only; the base renders the runtime as it runs until then, and a
// runtime that has both plans nothing.
func TestRuntimeMemoryLimitPlans(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		desired                 spec.Cluster
		observed                *live.Cluster
		readOnly, noMemoryLimit bool
		wantStep                string
	}{
		{"etcd, no limit", etcdSpec(t, 3, "3.5.9"), etcdLive(3, "3.5.9", 0), true, true, "runtime-memory-limit"},
		{"PostgreSQL, no limit", pgSpec(t, 3, "14.5"), pgLive(3, "14.5", 0), true, true, "runtime-memory-limit"},
		{"PostgreSQL, no limit, writable", pgSpec(t, 3, "14.5"), pgLive(3, "14.5", 0), false, true, "runtime-read-only-root"},
		{"PostgreSQL, limited, writable", pgSpec(t, 3, "14.5"), pgLive(3, "14.5", 0), false, false, "runtime-read-only-root"},
		{"PostgreSQL, both", pgSpec(t, 3, "14.5"), pgLive(3, "14.5", 0), true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := with(tc.observed, func(c *live.Cluster) {
				c.Runtime.ReadOnlyRoot, c.Runtime.NoMemoryLimit = tc.readOnly, tc.noMemoryLimit
			})
			p := kinds.PlanCluster(tc.desired, obs, nil)
			got := stepIDs(p)
			if tc.wantStep == "" {
				if len(got) != 0 {
					t.Fatalf("steps %v, want none", got)
				}
				return
			}
			if !slices.Equal(got, []string{tc.wantStep}) {
				t.Fatalf("steps %v, want %v", got, tc.wantStep)
			}
			if p.Baseline == nil || p.Baseline.RuntimeNoMemoryLimit != tc.noMemoryLimit || p.Baseline.RuntimeReadOnlyRoot != tc.readOnly {
				t.Fatalf("baseline %+v, want the runtime as it runs", p.Baseline)
			}
			s := step(t, p, tc.wantStep)
			h := s.Params.HardenRuntime
			if s.Kind != plan.HardenRuntime || s.Disruptive || h == nil || h.MemoryRequest != "192Mi" || h.MemoryLimit != "512Mi" {
				t.Fatalf("step %+v %+v, want HardenRuntime with the memory request and limit", s, h)
			}
			if !strings.Contains(s.Summary, "a memory request of 192Mi and a limit of 512Mi") || !strings.Contains(s.Summary, "no member restarts") {
				t.Errorf("summary %q", s.Summary)
			}
		})
	}
}
