package gates

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// A compaction step is done once the rendered config sets its policy and
// the runtime reports running it.
func TestCompactionApplied(t *testing.T) {
	cs, err := spec.Decode("e.yaml", []byte("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 1, version: \"3.5.21\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	to := plan.CompactionSettings{Mode: "revision", Retention: "1000"}
	step := plan.Step{ID: "configure-compaction", Kind: plan.EtcdConfigureCompaction,
		Gates:  []plan.Gate{{Kind: plan.GateCompactionApplied, When: plan.After}},
		Params: plan.Params{EtcdConfigureCompaction: &plan.EtcdConfigureCompactionParams{To: to}}}
	with := func(c *live.Compaction) *live.Cluster {
		o := etcd(live.Member{Name: "e-0", Ready: true, Role: live.RoleLeader})
		o.Compaction = c
		return o
	}
	for _, tc := range []struct {
		name string
		obs  *live.Cluster
		pass bool
	}{
		{"not rendered", with(nil), false},
		{"rendered, the runtime does not run it", with(&live.Compaction{Mode: "revision", Retention: "1000"}), false},
		{"another policy", with(&live.Compaction{Mode: "periodic", Retention: "1h", Applied: true}), false},
		{"applied", with(&live.Compaction{Mode: "revision", Retention: "1000", Applied: true}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := After(step, cs[0], tc.obs, time.Now())
			if len(r) != 1 || r[0].Pass != tc.pass {
				t.Errorf("%+v, want pass %v", r, tc.pass)
			}
		})
	}
	// Without the step's parameters, the spec's policy (the default).
	if r := Evaluate(plan.Gate{Kind: plan.GateCompactionApplied}, cs[0], with(&live.Compaction{Mode: "periodic", Retention: "1h", Applied: true}), time.Now()); !r.Pass {
		t.Errorf("the default policy: %+v", r)
	}
}
