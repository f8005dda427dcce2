package renderer

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// A database kind's renderer refuses a step kind of another kind's, with
// an error naming both; it never renders it as the other kind would.
func TestApplyStepRefusesAnotherKindsStep(t *testing.T) {
	for _, tt := range []struct {
		kind Kind
		c    spec.Cluster
		step plan.Kind
	}{
		{Etcd(), &spec.EtcdCluster{}, plan.PostgresSwitchover},
		{Postgres(), &spec.PostgresCluster{}, plan.EtcdAddMember},
	} {
		t.Run(tt.kind.Kind(), func(t *testing.T) {
			s := plan.Step{ID: "s", Kind: tt.step}
			_, err := Settings{Replicas: 3}.apply(tt.kind, tt.c, s)
			if err == nil || !strings.Contains(err.Error(), tt.kind.Kind()) || !strings.Contains(err.Error(), string(tt.step)) {
				t.Fatalf("apply(%s) = %v, want an error naming %s and %s", tt.step, err, tt.kind.Kind(), tt.step)
			}
		})
	}
}
