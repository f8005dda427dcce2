package policies

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// namedCluster is a PostgreSQL cluster spec with an environment label.
func namedCluster(t *testing.T, name, env string) spec.Cluster { return pgAt(t, name, env, "15.4") }

func TestConcurrency(t *testing.T) {
	disruptive := &plan.Step{Kind: plan.UpgradeMember, Disruptive: true}
	gentle := &plan.Step{Kind: plan.ConfigureBackup}
	held := []plan.Decision{{Policy: "w", Verdict: plan.Hold}}
	type entry struct {
		name, env string
		status    plan.Status
		next      *plan.Step
		decisions []plan.Decision
	}
	tests := []struct {
		name    string
		max     int
		entries []entry
		// want is each entry's verdict, "" for no opinion.
		want []plan.Verdict
	}{
		{"first by name goes", 1, []entry{
			{"b", "production", plan.StatusPlanned, disruptive, nil},
			{"a", "production", plan.StatusPlanned, disruptive, nil},
		}, []plan.Verdict{plan.Hold, plan.Allow}},
		{"a wait takes the place", 1, []entry{
			{"a", "production", plan.StatusPlanned, disruptive, nil},
			{"z", "production", plan.StatusWaiting, nil, nil},
		}, []plan.Verdict{plan.Hold, ""}},
		{"two places", 2, []entry{
			{"c", "production", plan.StatusPlanned, disruptive, nil},
			{"a", "production", plan.StatusPlanned, disruptive, nil},
			{"b", "production", plan.StatusPlanned, disruptive, nil},
		}, []plan.Verdict{plan.Hold, plan.Allow, plan.Allow}},
		{"gentle steps are not counted", 1, []entry{
			{"a", "production", plan.StatusPlanned, gentle, nil},
			{"b", "production", plan.StatusPlanned, disruptive, nil},
		}, []plan.Verdict{"", plan.Allow}},
		{"clusters outside the selector are not counted", 1, []entry{
			{"a", "staging", plan.StatusWaiting, nil, nil},
			{"b", "staging", plan.StatusPlanned, disruptive, nil},
			{"c", "production", plan.StatusPlanned, disruptive, nil},
		}, []plan.Verdict{"", "", plan.Allow}},
		{"a step another policy holds gives up its place", 1, []entry{
			{"a", "production", plan.StatusPlanned, disruptive, held},
			{"b", "production", plan.StatusPlanned, disruptive, nil},
		}, []plan.Verdict{"", plan.Allow}},
		{"converged clusters are free", 1, []entry{
			{"a", "production", plan.StatusConverged, nil, nil},
			{"b", "production", plan.StatusPlanned, disruptive, nil},
		}, []plan.Verdict{"", plan.Allow}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var entries []FleetEntry
			for _, e := range tc.entries {
				entries = append(entries, FleetEntry{Cluster: namedCluster(t, e.name, e.env), Status: e.status, Next: e.next, Decisions: e.decisions})
			}
			set := Set{Concurrency{PolicyName: "prod/concurrency", Max: tc.max, Selector: Selector{"environment": "production"}}}
			got := set.EvaluateFleet(entries)
			for i, want := range tc.want {
				var verdict plan.Verdict
				if len(got[i]) > 0 {
					verdict = got[i][0].Verdict
					if got[i][0].Policy != "prod/concurrency" || got[i][0].Reason == "" {
						t.Errorf("%s: decision %+v lacks its policy or reason", tc.entries[i].name, got[i][0])
					}
				}
				if verdict != want {
					t.Errorf("%s: verdict %q, want %q (%+v)", tc.entries[i].name, verdict, want, got[i])
				}
			}
		})
	}
}

func TestConcurrencyHoldNamesTheBusyClusters(t *testing.T) {
	d := &plan.Step{Kind: plan.UpgradeMember, Disruptive: true}
	entries := []FleetEntry{
		{Cluster: namedCluster(t, "a", "production"), Status: plan.StatusWaiting},
		{Cluster: namedCluster(t, "b", "production"), Status: plan.StatusPlanned, Next: d},
	}
	got := Set{Concurrency{PolicyName: "c", Max: 1}}.EvaluateFleet(entries)
	if r := got[1][0].Reason; !strings.Contains(r, "at most 1") || !strings.Contains(r, "PostgresCluster/a") {
		t.Fatalf("reason %q should name the limit and the busy cluster", r)
	}
}

func TestLoadConcurrency(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	set, err := Load("p.yaml", []byte(policyHead+"  concurrency: {maxInFlight: 2}\n"), now)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := set[0].(Concurrency); len(set) != 1 || !ok || c.Max != 2 || c.PolicyName != "prod/concurrency" {
		t.Fatalf("set = %#v", set)
	}
	_, err = Load("p.yaml", []byte(policyHead+"  concurrency: {maxInFlight: 0}\n"), now)
	if err == nil || !strings.Contains(err.Error(), "p.yaml:5:") || !strings.Contains(err.Error(), "spec.concurrency.maxInFlight: must be at least 1") {
		t.Fatalf("err = %v", err)
	}
}
