package renderer

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/plan"
)

func TestPlanMarkdownSaysWhetherCairnMerges(t *testing.T) {
	merge := plan.Decision{Policy: "prod/auto-merge", Verdict: plan.Allow, AutoMerge: true, Reason: "cairn merges EtcdAddMember steps once their gates pass"}
	tests := []struct {
		name      string
		decisions []plan.Decision
		want      []string
	}{
		{"no policy", nil, nil},
		{"allowed", []plan.Decision{merge}, []string{"- Policy `prod/auto-merge`: Allow (auto-merge) (cairn merges", "- Auto-merge: yes (policy prod/auto-merge lets cairn merge it"}},
		{"held", []plan.Decision{merge, {Policy: "window", Verdict: plan.Hold, Reason: "later"}}, []string{"- Auto-merge: no (not while held by window)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := plan.Plan{Cluster: plan.ClusterRef{Kind: "EtcdCluster", Name: "e"}, Status: plan.StatusPlanned, Steps: []plan.Step{
				{ID: "etcd-add-3", Kind: plan.EtcdAddMember, Summary: "Add e-3", Reversible: true, Decisions: tc.decisions}}}
			md := string(planMarkdown(p, "etcd-add-3"))
			if tc.want == nil && strings.Contains(md, "uto-merge") {
				t.Errorf("PLAN.md without an auto-merge policy:\n%s", md)
			}
			for _, w := range tc.want {
				if !strings.Contains(md, w) {
					t.Errorf("PLAN.md lacks %q:\n%s", w, md)
				}
			}
		})
	}
}

// A note on a field no step applies is in PLAN.md, converged or not.
func TestPlanMarkdownShowsNotes(t *testing.T) {
	for _, p := range []plan.Plan{
		{Cluster: plan.ClusterRef{Kind: "PostgresCluster", Name: "pg"}, Status: plan.StatusConverged},
		{Cluster: plan.ClusterRef{Kind: "PostgresCluster", Name: "pg"}, Status: plan.StatusPlanned, Steps: []plan.Step{{ID: "pg-add-2", Kind: plan.PostgresAddReplica, Summary: "Add pg-2"}}},
	} {
		p.Notes = []plan.Note{{Field: "spec.restoreFrom", Reason: "applies only when the cluster is created"}}
		if md := string(planMarkdown(p, "")); !strings.Contains(md, "> **Note** (`spec.restoreFrom`): applies only when the cluster is created") {
			t.Errorf("%s: PLAN.md lacks the note:\n%s", p.Status, md)
		}
	}
}
