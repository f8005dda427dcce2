package planner

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

const (
	pgRestore   = "restoreFrom: {storageLocation: 's3://bkp/pg', cluster: orders, backup: latest, trustForeignBucket: true}"
	etcdRestore = "restoreFrom: {storageLocation: 's3://bkp/e', backup: 20261130T020000Z-1a2b3c, trustForeignBucket: true}"
)

// spec.restoreFrom is read only by the create step: on a cluster that
// runs, the plan is what the rest of the spec makes it, and it says that
// restoreFrom changes nothing, never silently.
func TestRestoreFromOnARunningClusterIsNoted(t *testing.T) {
	cases := []struct {
		name     string
		desired  spec.Cluster
		observed *live.Cluster
		status   plan.Status
		says     []string // empty: no note
	}{
		{"PostgreSQL: added to a running cluster, converged and says so", pgSpec(t, 3, "15.4", pgRestore), pgLive(3, "15.4", 0), plan.StatusConverged,
			[]string{"applies only when the cluster is created", "pg already runs", "backup of orders from s3://bkp/pg"}},
		{"PostgreSQL: beside a scale-out, the steps are the scale-out's", pgSpec(t, 4, "15.4", pgRestore), pgLive(3, "15.4", 0), plan.StatusPlanned,
			[]string{"never restored in place"}},
		{"etcd: the source defaults to the cluster's own name", etcdSpec(t, 3, "3.5.21", etcdRestore), etcdLive(3, "3.5.21", 0), plan.StatusConverged,
			[]string{"backup of e from s3://bkp/e"}},
		{"etcd: waiting, still said", etcdSpec(t, 3, "3.5.21", etcdRestore), with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[1].Ready = false }), plan.StatusWaiting,
			[]string{"applies only when the cluster is created"}},
		{"a new cluster: the create step restores, nothing to note", pgSpec(t, 3, "15.4", pgRestore), nil, plan.StatusPlanned, nil},
		{"no restoreFrom: nothing to note", pgSpec(t, 3, "15.4"), pgLive(3, "15.4", 0), plan.StatusConverged, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := kinds.PlanCluster(tc.desired, tc.observed, nil)
			if p.Status != tc.status {
				t.Fatalf("status %s (steps %v, waiting %v), want %s", p.Status, stepIDs(p), p.Waiting, tc.status)
			}
			if len(tc.says) == 0 {
				if len(p.Notes) > 0 {
					t.Errorf("notes %v, want none", p.Notes)
				}
				return
			}
			if len(p.Notes) != 1 || p.Notes[0].Field != "spec.restoreFrom" {
				t.Fatalf("notes %v, want one on spec.restoreFrom", p.Notes)
			}
			for _, s := range tc.says {
				if !strings.Contains(p.Notes[0].Reason, s) {
					t.Errorf("note %q does not say %q", p.Notes[0].Reason, s)
				}
			}
			for _, s := range p.Steps {
				if s.Kind == plan.CreateCluster {
					t.Errorf("a running cluster got a create step: %v", stepIDs(p))
				}
			}
		})
	}
}
