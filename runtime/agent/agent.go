package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/cairn-dev/cairn/planner/contract"
)

// Config says which cluster an agent looks after. The kind of the
// cluster is not here: it is the KeeperFactory given to New, which reads
// the fields of its kind.
type Config struct {
	Cluster, Namespace string
	// Identity names this replica in the Lease (its pod name).
	Identity string
	// Interval is the time between passes; zero takes the kind's
	// default (2s for etcd, 500ms for PostgreSQL).
	Interval time.Duration
	// Metrics, when set, is the registry the agent's metrics are
	// registered with: its kind's own (cairn_etcd_* or cairn_postgres_*,
	// by the kind's KeeperFactory) and the backup metrics (cairn_backup_*).
	// Nil keeps no metrics.
	Metrics prometheus.Registerer
	Log     *slog.Logger

	// etcd: EtcdEndpoints are the client endpoints the membership keeper
	// dials (empty: the cluster's client Service,
	// http://<cluster>-client.<namespace>.svc:2379); EtcdPort is the
	// members' client port backups use (2379 when zero).
	EtcdEndpoints []string
	EtcdPort      int
	// PostgreSQL: PostgresPort is the members' port (5432 when zero);
	// Failover are the failover timings.
	PostgresPort int
	Failover     FailoverSettings
}

// Agent is the runtime of one cluster: a leader election, the keeper of
// the cluster's kind and its backups.
type Agent struct {
	cfg     Config
	client  kubernetes.Interface
	keeper  Keeper
	backups *Backups
}

// New returns the agent of a cluster whose kind's keeper keeper builds,
// with the metrics registered (cfg.Metrics).
func New(cfg Config, client kubernetes.Interface, keeper KeeperFactory) (*Agent, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	k, err := keeper(client, cfg)
	if err != nil {
		return nil, fmt.Errorf("runtime of %s: %w", cfg.Cluster, err)
	}
	var metrics *BackupMetrics
	if cfg.Metrics != nil {
		if metrics, err = NewBackupMetrics(cfg.Metrics, cfg.Cluster); err != nil {
			return nil, fmt.Errorf("runtime of %s: %w", cfg.Cluster, err)
		}
	}
	return &Agent{cfg: cfg, client: client, keeper: k,
		backups: &Backups{Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster, Source: k.BackupSource,
			Metrics: metrics, Log: cfg.Log}}, nil
}

// Run takes part in the leader election on the Lease <cluster>-runtime
// and, while leading, makes a pass every interval. It returns when ctx
// ends.
func (a *Agent) Run(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: contract.Runtime(a.cfg.Cluster), Namespace: a.cfg.Namespace},
		Client:     a.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: a.cfg.Identity},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		// The lease is not released on shutdown: client-go would release
		// it while a pass may still be running. A new leader takes over
		// when it expires.
		Lock: lock, ReleaseOnCancel: false,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: a.lead,
			OnStoppedLeading: func() { a.cfg.Log.Info("stopped leading", "identity", a.cfg.Identity) },
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	for ctx.Err() == nil {
		le.Run(ctx) // returns when leadership is lost; stand again
	}
	return nil
}

func (a *Agent) lead(ctx context.Context) {
	a.cfg.Log.Info("leading", "identity", a.cfg.Identity, "cluster", a.cfg.Cluster)
	// Backups run beside the passes, on their own schedule, and stop with
	// the leadership.
	backups := make(chan struct{})
	go func() { defer close(backups); a.backups.Run(ctx) }()
	defer func() { <-backups }()
	t := time.NewTicker(a.keeper.Interval())
	defer t.Stop()
	for {
		if err := a.keeper.Pass(ctx); err != nil && ctx.Err() == nil {
			a.cfg.Log.Error("runtime pass failed", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
