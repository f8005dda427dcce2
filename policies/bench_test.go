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
