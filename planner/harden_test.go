package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// A pod template rendered before cairn gave its containers read-only
// root filesystems gets them by one rolling restart (the partition down
// one ordinal at a time, PostgreSQL's primary moved away first), said in
// every step; a change that restarts anyway brings them in the same
// restart; once they run, nothing more.
func TestReadOnlyRootsComeByARollingRestart(t *testing.T) {
	cases := []struct {
		name     string
		desired  spec.Cluster
		observed *live.Cluster
		also     string
	}{
		{name: "etcd", desired: etcdSpec(t, 3, "3.5.9"), observed: etcdLive(3, "3.5.9", 0)},
		{name: "PostgreSQL", desired: pgSpec(t, 3, "14.5"), observed: pgLive(3, "14.5", 1)},
		{name: "PostgreSQL, with new resources", desired: pgSpec(t, 3, "14.5", "resources: {requests: {cpu: '2'}}"), observed: pgLive(3, "14.5", 0),
			also: "resources"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := with(tc.observed, func(c *live.Cluster) { c.StatefulSet.ReadOnlyRoot = false })
			p := kinds.PlanCluster(tc.desired, obs, nil)
			var ords []int
			for _, s := range p.Steps {
				if s.Kind == plan.PostgresSwitchover {
					continue
				}
				if s.Kind != plan.RestartMember {
					t.Fatalf("step %s (%s), want only restarts: %v", s.ID, s.Kind, stepIDs(p))
				}
				rm := s.Params.RestartMember
				ords = append(ords, rm.Partition)
				if len(ords) == 1 && (rm.Template == nil || !rm.Template.ReadOnlyRoot) {
					t.Fatalf("the first restart's template %+v, want read-only roots", rm.Template)
				}
				if !strings.Contains(s.Summary, "read-only root filesystems") || !strings.Contains(s.Summary, tc.also) {
					t.Errorf("summary %q, want read-only root filesystems and %q", s.Summary, tc.also)
				}
			}
			if !slices.Equal(ords, []int{2, 1, 0}) {
				t.Fatalf("restarts at partitions %v, want 2, 1, 0", ords)
			}

			obs.StatefulSet.ReadOnlyRoot = true
			if got := kinds.PlanCluster(tc.desired, obs, nil); tc.also == "" && len(got.Steps) != 0 {
				t.Fatalf("with read-only roots: steps %v", stepIDs(got))
			}
		})
	}
}
