package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/backup"
)

// postgresInterval is the PostgreSQL keeper's default time between
// passes: a failover waits for passes to see the primary gone.
const postgresInterval = 500 * time.Millisecond

// Config is what the PostgreSQL keeper needs besides the agent's Config.
type Config struct {
	// Port is the members' port (5432 when zero).
	Port int
	// Failover are the failover timings.
	Failover FailoverSettings
}

var _ agent.KeeperFactory = Config{}.Keeper

// Keeper is the agent.KeeperFactory of PostgreSQL clusters: the roles
// and failover keeper (Roles) of cfg's cluster, its members on c.Port,
// with c.Failover's timings and the cairn_postgres_* metrics.
func (c Config) Keeper(client kubernetes.Interface, cfg agent.Config) (agent.Keeper, error) {
	r := &Roles{Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster, Port: cmp.Or(c.Port, contract.PostgresPort),
		Identity: cfg.Identity, Settings: c.Failover, Log: cfg.Log, interval: cfg.Interval, CertLifetime: cfg.CertLifetime}
	if cfg.Metrics != nil {
		metrics, err := NewPostgresMetrics(cfg.Metrics, cfg.Cluster)
		if err != nil {
			return nil, err
		}
		r.Metrics = metrics
	}
	return r, nil
}

// ForgetObservations drops what the metrics observed while the replica
// led (agent.Observer).
func (r *Roles) ForgetObservations() { r.Metrics.forget() }

// Interval is the time between passes: 500ms unless set.
func (r *Roles) Interval() time.Duration { return cmp.Or(r.interval, postgresInterval) }

// BackupSource picks a ready replica when there is one, else the primary
// (a backup never waits for a replica), the highest ordinal first; base
// backups connect as the replication user.
func (r *Roles) BackupSource(ctx context.Context) (backup.Source, string, error) {
	ready, err := agent.ReadyMembers(ctx, r.Client, r.Namespace, contract.AppPostgres, r.Cluster)
	if err != nil {
		return nil, "", err
	}
	var pick *corev1.Pod
	for _, role := range []string{contract.RoleReplica, contract.RolePrimary} {
		if i := slices.IndexFunc(ready, func(p corev1.Pod) bool { return p.Labels[contract.LabelRole] == role }); i >= 0 {
			pick = &ready[i]
			break
		}
	}
	if pick == nil {
		return nil, "", agent.ErrNoMember
	}
	secret, err := r.Client.CoreV1().Secrets(r.Namespace).Get(ctx, contract.ReplicationSecret(r.Cluster), metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("read the replication password: %w", err)
	}
	tc, err := r.lastAuth().tlsConfig(contract.PostgresMemberServerName(r.Cluster, r.Namespace, pick.Name))
	if err != nil {
		return nil, "", fmt.Errorf("back up %s over TLS: %w", pick.Name, err)
	}
	return backup.PostgresSource{Member: pick.Name, Host: pick.Status.PodIP, Port: cmp.Or(r.Port, contract.PostgresPort),
		User: contract.PostgresReplicationUser, Password: string(secret.Data[contract.SecretKeyPassword]), TLS: tc}, spec.PostgresKind, nil
}
