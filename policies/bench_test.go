package policies

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// BenchmarkEvaluate1000x10 decides on one step of each of 1,000 clusters
// with 10 policies: 8 CEL rules, a maintenance window and a backup
// freshness policy.
func BenchmarkEvaluate1000x10(b *testing.B) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var doc strings.Builder
	doc.WriteString(policyHead + "  maintenanceWindow: {schedule: '0 22 * * 1-5', duration: 2h, timeZone: Europe/Berlin}\n  backupFreshness: {maxAge: 6h}\n  rules:\n")
	for i := range 8 {
		fmt.Fprintf(&doc, "  - name: r%d\n    expression: 'step.disruptive && now.getDayOfWeek() == %d && cluster.labels.exists(k, k == \"env\") ? {\"verdict\": \"hold\", \"message\": \"no\"} : {\"verdict\": \"allow\", \"message\": \"\"}'\n", i, i%7)
	}
	set, err := Load("bench.yaml", []byte(doc.String()), now)
	if err != nil || len(set) != 10 {
		b.Fatalf("%d policies: %v", len(set), err)
	}
	var inputs []Input
	for i := range 1000 {
		cs, err := spec.Decode("c.yaml", []byte(fmt.Sprintf("apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: c%d, labels: {env: prod}}\nspec: {version: \"15.4\", instances: 3, storage: 10Gi}\n", i)))
		if err != nil {
			b.Fatal(err)
		}
		inputs = append(inputs, Input{Cluster: cs[0], Observed: &live.Cluster{Members: make([]live.Member, 3)},
			Step: plan.Step{ID: "upgrade-2-to-15.8", Kind: plan.UpgradeMember, Disruptive: i%2 == 0, Reversible: true}})
	}
	b.ReportAllocs()
	decisions := 0
	for b.Loop() {
		decisions = 0
		for _, in := range inputs {
			decisions += len(set.Evaluate(in))
		}
	}
	b.ReportMetric(float64(decisions), "decisions/op")
}

// BenchmarkFleet1000 decides concurrency and promotion order for 1,000
// clusters: 500 production clusters upgrading, 500 staging clusters that
// vouch (or not yet) for their version.
func BenchmarkFleet1000(b *testing.B) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	set, err := Load("bench.yaml", []byte(policyHead+"  selector: {env: prod}\n  concurrency: {maxInFlight: 5}\n  promotion: {after: {env: staging}, soak: 24h}\n"), now)
	if err != nil || len(set) != 2 {
		b.Fatalf("%d policies: %v", len(set), err)
	}
	var entries []FleetEntry
	for i := range 1000 {
		env := []string{"prod", "staging"}[i%2]
		cs, err := spec.Decode("c.yaml", []byte(fmt.Sprintf("apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: c%d, labels: {env: %s}}\nspec: {version: \"15.8\", instances: 3, storage: 10Gi}\n", i, env)))
		if err != nil {
			b.Fatal(err)
		}
		obs := &live.Cluster{Kind: spec.PostgresKind, Name: cs[0].Ref().Name}
		version, since := "15.4", "2026-11-01T00:00:00Z"
		if env == "staging" {
			version = "15.8"
			if i%4 == 1 {
				since = "2026-11-27T06:00:00Z"
			}
		}
		for m := range 3 {
			obs.Members = append(obs.Members, live.Member{Name: fmt.Sprintf("%s-%d", obs.Name, m), Version: version, Ready: true, ReadySince: live.Timestamp(since)})
		}
		e := FleetEntry{Cluster: cs[0], Observed: obs, Status: plan.StatusConverged}
		if env == "prod" {
			e.Status, e.Next = plan.StatusPlanned, &plan.Step{Kind: plan.UpgradeMember, Disruptive: i%3 == 0}
		}
		entries = append(entries, e)
	}
	b.ReportAllocs()
	decisions := 0
	for b.Loop() {
		decisions = 0
		for _, ds := range set.EvaluateFleet(entries) {
			decisions += len(ds)
		}
	}
	b.ReportMetric(float64(decisions), "decisions/op")
}
