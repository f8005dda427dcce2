package observe

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/live"
)

// Kind reads what only one kind's pods and runtime status tell; the
// Observer reads the rest (StatefulSet, rendered config, backups,
// volumes) the same way for every kind.
type Kind interface {
	// Kind is the spec kind it observes, as spec.Ref.Kind names it.
	Kind() string
	// Container is the database container, whose image tag is the
	// members' version.
	Container() string
	// Status reads the kind's part of the runtime's status ConfigMap
	// (its data; empty when there is none yet) into out, and returns what
	// fills in each member from its pod.
	Status(status map[string]string, out *live.Cluster) (MemberFunc, error)
}

// Reader is a Kind that reads objects of its own besides the status
// ConfigMap (PostgreSQL: its rendered config and its upgrade-check Job),
// through o's client, into out.
type Reader interface {
	Read(ctx context.Context, o *Observer, namespace, cluster string, out *live.Cluster) error
}

// MemberFunc fills in a member (its name, image version and readiness
// already read) from its pod.
type MemberFunc func(pod *corev1.Pod, m *live.Member)
