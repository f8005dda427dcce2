package observe

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Postgres observes PostgresCluster: a member's role is the runtime's role
// label on its pod.
func Postgres() Kind { return postgresKind{} }

type postgresKind struct{}

func (postgresKind) Kind() string      { return spec.PostgresKind }
func (postgresKind) Container() string { return contract.PostgresContainer }

func (postgresKind) Status(map[string]string, *live.Cluster) (MemberFunc, error) {
	return func(pod *corev1.Pod, m *live.Member) {
		if r := pod.Labels[contract.LabelRole]; r == contract.RolePrimary || r == contract.RoleReplica {
			m.Role = live.Role(r)
		}
	}, nil
}
