package policies

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
)

func TestAutoMergeLoadErrors(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct{ name, doc, want string }{
		{"always irreversible kind", policyHead + "  autoMerge:\n    kinds: [EtcdAddMember, ExpandStorage]\n",
			`p.yaml:6:28: spec.autoMerge.kinds[1]: ExpandStorage steps are irreversible`},
		{"major upgrade", policyHead + "  autoMerge: {kinds: [PostgresMajorUpgrade]}\n",
			`p.yaml:5:23: spec.autoMerge.kinds[0]: PostgresMajorUpgrade steps are irreversible`},
		{"unknown kind", policyHead + "  autoMerge: {kinds: [Scale]}\n", `spec.autoMerge.kinds[0]: unknown step kind "Scale"`},
		{"no kinds", policyHead + "  autoMerge: {kinds: []}\n", `spec.autoMerge.kinds: lists the step kinds`},
		{"unknown field", policyHead + "  autoMerge: {kinds: [ScaleIn], method: squash}\n", `spec.autoMerge.method: unknown field`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p.yaml", []byte(tc.doc), now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestAutoMergeDecides(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	doc := policyHead + "  selector: {environment: staging}\n  autoMerge: {kinds: [PostgresAddReplica, UpgradeMember]}\n"
	set, err := Load("p.yaml", []byte(doc), now)
	if err != nil {
		t.Fatal(err)
	}
	staging, prod := cluster(t, "environment: staging"), cluster(t, "environment: production")
	add := plan.Step{Kind: plan.PostgresAddReplica, Reversible: true}
	lastOfMinor := plan.Step{Kind: plan.UpgradeMember, Reversible: false}
	tests := []struct {
		name      string
		in        Input
		verdict   plan.Verdict
		autoMerge bool
	}{
		{"a listed kind on a selected cluster", Input{Cluster: staging, Step: add}, plan.Allow, true},
		{"a cluster the selector does not pick", Input{Cluster: prod, Step: add}, "", false},
		{"a kind not listed", Input{Cluster: staging, Step: plan.Step{Kind: plan.ScaleIn, Reversible: true}}, "", false},
		{"irreversible this time", Input{Cluster: staging, Step: lastOfMinor}, plan.Allow, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := set.Evaluate(tc.in)
			switch {
			case tc.verdict == "" && len(ds) != 0:
				t.Fatalf("decisions %+v, want none", ds)
			case tc.verdict != "" && (len(ds) != 1 || ds[0].Verdict != tc.verdict || ds[0].AutoMerge != tc.autoMerge || ds[0].Policy != "prod/auto-merge"):
				t.Fatalf("decisions %+v, want %s auto-merge=%v", ds, tc.verdict, tc.autoMerge)
			}
		})
	}
}
