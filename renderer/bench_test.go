package renderer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
)

// benchFleet is n clusters, half etcd and half PostgreSQL, each with a
// change to make (scale-out, upgrade, storage), and what runs.
func benchFleet(b testing.TB, n int) ([]spec.Cluster, *live.Snapshot) {
	var docs, obs strings.Builder
	obs.WriteString("apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n")
	for i := range n {
		name := fmt.Sprintf("c%04d", i)
		if i%2 == 0 {
			fmt.Fprintf(&docs, "---\napiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: %s}\nspec: {size: 5, version: \"3.5.21\", storage: 16Gi, backup: {schedule: \"0 3 * * *\", storageLocation: \"s3://bkp/etcd\"}}\n", name)
			obs.WriteString(indentItem(strings.ReplaceAll(etcdLiveYAML(3, "3.4.37", 0), "name: e", "name: "+name)))
		} else {
			fmt.Fprintf(&docs, "---\napiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: %s}\nspec: {version: \"14.9\", instances: 3, storage: 10Gi}\n", name)
			live := strings.ReplaceAll(pgLiveYAML(3, "14.5", 1, ""), "name: pg", "name: "+name)
			live = strings.Replace(live, "backup: {schedule: \"0 2 * * *\", timeZone: UTC, storageLocation: \"s3://bkp/pg\", retentionCount: 7}\n", "", 1)
			obs.WriteString(indentItem(live))
		}
	}
	old := spec.Limits
	spec.Limits.MaxDocuments, spec.Limits.MaxBytes = n, 1<<24
	defer func() { spec.Limits = old }()
	cs, err := spec.Decode("fleet.yaml", []byte(docs.String()))
	if err != nil {
		b.Fatal(err)
	}
	snap, err := live.Decode("live.yaml", []byte(obs.String()))
	if err != nil {
		b.Fatal(err)
	}
	return cs, snap
}

func indentItem(s string) string {
	return "- " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ") + "\n"
}

// BenchmarkRender1000 renders and builds (every overlay, with kustomize)
// 1,000 clusters' trees, each selecting its plan's first step.
func BenchmarkRender1000(b *testing.B) {
	desired, observed := benchFleet(b, 1000)
	plans := planner.New(planner.Etcd(), planner.Postgres()).Plan(desired, observed, nil)
	r, err := New(Options{}, Etcd(), Postgres())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	files, overlays := 0, 0
	for b.Loop() {
		files, overlays = 0, 0
		for i, c := range desired {
			p := plans.Plans[i]
			t, _, err := r.Render(c, p, p.Steps[0].ID)
			if err != nil {
				b.Fatal(err)
			}
			files += len(t)
			overlays += len(p.Steps) + 2
		}
	}
	b.ReportMetric(float64(files), "files/op")
	b.ReportMetric(float64(overlays), "overlays/op")
}
