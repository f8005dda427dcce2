package observe

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Postgres observes PostgresCluster: a member's role is the runtime's role
// label on its pod; the config it runs is the runtime's status.
func Postgres() Kind { return postgresKind{} }

type postgresKind struct{}

func (postgresKind) Kind() string      { return spec.PostgresKind }
func (postgresKind) Container() string { return contract.PostgresContainer }

// Read implements Reader: the parameters of the rendered postgresql.conf
// and the pre-flight check Job of a major upgrade.
func (postgresKind) Read(ctx context.Context, o *Observer, ns, cluster string, out *live.Cluster) error {
	conf, err := o.configMap(ctx, ns, contract.PostgresConfig(cluster))
	if err != nil {
		return err
	}
	out.Parameters = parameters(conf[contract.PostgresConfFile])
	out.UpgradeCheck, err = o.upgradeCheck(ctx, ns, cluster)
	return err
}

func (postgresKind) Status(status map[string]string, _ *live.Cluster) (MemberFunc, error) {
	conf, err := contract.ParsePostgresConfigStatus(status[contract.StatusKeyPostgresConfig])
	if err != nil {
		return nil, err
	}
	return func(pod *corev1.Pod, m *live.Member) {
		if r := pod.Labels[contract.LabelRole]; r == contract.RolePrimary || r == contract.RoleReplica {
			m.Role = live.Role(r)
		}
		if mc, ok := conf.Members[m.Name]; ok {
			m.ConfigRevision, m.PendingRestart, m.TLS = mc.Revision, mc.PendingRestart, mc.TLS
		}
	}, nil
}
