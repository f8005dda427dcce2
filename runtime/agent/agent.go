package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Config says which cluster an agent looks after.
type Config struct {
	Cluster, Namespace string
	// Identity names this replica in the Lease (its pod name).
	Identity string
	// PostgresPort is the members' port (5432 in pods).
	PostgresPort int
	// Interval is the time between passes: 2s for etcd, 500ms for
	// PostgreSQL by default.
	Interval time.Duration
	// Postgres says the cluster is PostgreSQL, whose role labels the agent
	// keeps. Otherwise it is etcd, reached at EtcdEndpoints, whose
	// membership the agent looks after.
	Postgres      bool
	EtcdEndpoints []string
	// Metrics, when set, receive the etcd membership metrics.
	Metrics *Metrics
	// PostgresMetrics, when set, receive the PostgreSQL metrics.
	PostgresMetrics *PostgresMetrics
	// Failover are the PostgreSQL failover timings.
	Failover FailoverSettings
	// BackupMetrics, when set, receive the backup metrics; EtcdPort is the
	// members' client port backups use (2379 in pods).
	BackupMetrics *BackupMetrics
	EtcdPort      int
	Log           *slog.Logger
}

// Agent is the runtime of one cluster.
type Agent struct {
	cfg     Config
	client  kubernetes.Interface
	roles   *Roles
	members *Membership
	backups *Backups
}

// New returns the agent of a cluster.
func New(cfg Config, client kubernetes.Interface) *Agent {
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
		if cfg.Postgres {
			cfg.Interval = 500 * time.Millisecond
		}
	}
	if cfg.PostgresPort == 0 {
		cfg.PostgresPort = 5432
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Agent{cfg: cfg, client: client,
		roles: &Roles{Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster, Port: cfg.PostgresPort, Identity: cfg.Identity,
			Settings: cfg.Failover, Metrics: cfg.PostgresMetrics, Log: cfg.Log},
		members: &Membership{Endpoints: cfg.EtcdEndpoints, Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster, Metrics: cfg.Metrics, Log: cfg.Log},
		backups: &Backups{Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster, Postgres: cfg.Postgres, PostgresPort: cfg.PostgresPort,
			EtcdPort: cfg.EtcdPort, Metrics: cfg.BackupMetrics, Log: cfg.Log}}
}

// Run takes part in the leader election on the Lease <cluster>-runtime
// and, while leading, makes a pass every interval. It returns when ctx
// ends.
func (a *Agent) Run(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: a.cfg.Cluster + "-runtime", Namespace: a.cfg.Namespace},
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
	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	pass := a.roles.Pass
	if !a.cfg.Postgres {
		pass = a.members.Pass
	}
	for {
		if err := pass(ctx); err != nil && ctx.Err() == nil {
			a.cfg.Log.Error("runtime pass failed", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
