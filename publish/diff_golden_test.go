package publish

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/renderer"
)

// The diffs of real steps, as the renderer builds them: per object,
// byte-stable, each hunk where it says.
func TestStepDiffGolden(t *testing.T) {
	rend, err := renderer.New(renderer.Options{}, renderer.Etcd(), renderer.Postgres())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		doc  string
		obs  *live.Cluster
		kind plan.Kind
	}{
		{"etcd-scale-out", etcdSpecDoc("e", 5, "3.5.21"), etcdCluster("e", 3, "3.5.21"), plan.EtcdAddMember},
		{"pg-minor-upgrade-replica", pgSpecDoc("my-production-db", 3, "14.9"), pgCluster("my-production-db", 3, "14.5", 0), plan.UpgradeMember},
		{"pg-scale-in", pgSpecDoc("my-production-db", 2, "14.5"), pgCluster("my-production-db", 3, "14.5", 0), plan.ScaleIn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := planOf(t, tc.doc, tc.obs)
			step := pl.Steps[stepOf(t, pl, tc.kind)]
			_, built, err := rend.Render(decodeSpec(t, tc.doc), pl, step.ID)
			if err != nil {
				t.Fatal(err)
			}
			got := unifiedDiff(string(built.Base), string(built.Selected))
			if got == "" || got != unifiedDiff(string(built.Base), string(built.Selected)) {
				t.Fatalf("an empty or unstable diff: %q", got)
			}
			checkObjectHunks(t, string(built.Base), string(built.Selected), got)
			if strings.Contains(got, "--- base/apps/v1/StatefulSet") && !strings.Contains(got, "+++ step/apps/v1/StatefulSet") {
				t.Error("the StatefulSet is paired with another object")
			}
			golden(t, filepath.Join("testdata", "diff", tc.name+".diff"), got)
		})
	}
}
