package main

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/plan"
)

// A plan's notes (a creation-only field set on a running cluster) are in
// what cairn plan prints, converged or not.
func TestPlanTableShowsNotes(t *testing.T) {
	note := plan.Note{Field: "spec.restoreFrom", Reason: "applies only when the cluster is created"}
	for _, p := range []plan.Plan{
		{Cluster: plan.ClusterRef{Kind: "PostgresCluster", Name: "pg"}, Status: plan.StatusConverged, Notes: []plan.Note{note}},
		{Cluster: plan.ClusterRef{Kind: "PostgresCluster", Name: "pg"}, Status: plan.StatusPlanned, Notes: []plan.Note{note},
			Steps: []plan.Step{{ID: "pg-add-3", Kind: plan.PostgresAddReplica, Summary: "Add pg-3"}}},
	} {
		out := formatTable(plan.List{Plans: []plan.Plan{p}})
		if !strings.Contains(out, "  note (spec.restoreFrom): applies only when the cluster is created\n") {
			t.Errorf("%s:\n%s", p.Status, out)
		}
	}
}
