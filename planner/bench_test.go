package planner

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
)

// fleet builds n clusters, half etcd and half PostgreSQL, with a mix of
// changes (scale, upgrades, storage, backups, converged) against a
// snapshot of what runs.
func fleet(b *testing.B, n int) ([]spec.Cluster, *live.Snapshot) {
	r := rand.New(rand.NewPCG(7, 7))
	var docs strings.Builder
	obs := &live.Snapshot{APIVersion: live.APIVersion, Kind: live.Kind}
	for i := range n {
		name := fmt.Sprintf("c%04d", i)
		var c *live.Cluster
		if i%2 == 0 {
			fmt.Fprintf(&docs, "---\napiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: %s}\nspec: {size: %d, version: %q, storage: 16Gi}\n",
				name, []int{3, 5, 7}[r.IntN(3)], []string{"3.4.37", "3.5.21", "3.6.16"}[r.IntN(3)])
			c = etcdLive(3, []string{"3.2.32", "3.4.37", "3.5.21"}[r.IntN(3)], r.IntN(3))
		} else {
			fmt.Fprintf(&docs, "---\napiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: %s}\nspec:\n  version: %q\n  instances: %d\n  storage: 100Gi\n  backup: {schedule: '0 2 * * *', storageLocation: 's3://b-%s/pg'}\n",
				name, []string{"14.9", "15.4", "16.2"}[r.IntN(3)], 1+r.IntN(5), name)
			c = pgLive(3, []string{"14.5", "15.4"}[r.IntN(2)], r.IntN(3))
		}
		c.Name = name
		for j := range c.Members {
			c.Members[j].Name = fmt.Sprintf("%s-%d", name, j)
		}
		obs.Clusters = append(obs.Clusters, *c)
	}
	spec.Limits.MaxDocuments = n
	defer func() { spec.Limits.MaxDocuments = 100 }()
	cs, err := spec.Decode("fleet.yaml", []byte(docs.String()))
	if err != nil {
		b.Fatal(err)
	}
	return cs, obs
}

// BenchmarkPlan1000 plans 1,000 mixed clusters.
func BenchmarkPlan1000(b *testing.B) {
	desired, observed := fleet(b, 1000)
	b.ReportAllocs()
	steps := 0
	for b.Loop() {
		l := kinds.Plan(desired, observed, nil)
		steps = 0
		for _, p := range l.Plans {
			steps += len(p.Steps)
		}
	}
	b.ReportMetric(float64(steps), "steps/op")
}
