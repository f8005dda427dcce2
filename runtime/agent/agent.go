package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/cairn-dev/cairn/planner/contract"
)

// Config says which cluster an agent looks after, with what every kind
// shares. The kind of the cluster is not here: it is the KeeperFactory
// given to New, built from the kind's own config (etcd.Config,
// postgres.Config).
type Config struct {
	Cluster, Namespace string
	// Identity names this replica in the Lease (its pod name).
	Identity string
	// Interval is the time between passes; zero takes the kind's
	// default (2s for etcd, 500ms for PostgreSQL).
	Interval time.Duration
	// Kind is the cluster's kind (its spec.Ref.Kind) as
	// cairn_runtime_leader's kind label names it.
	Kind string
	// Metrics, when set, is the registry the agent's metrics are
	// registered with: cairn_runtime_leader, its kind's own
	// (cairn_etcd_* or cairn_postgres_*, by the kind's KeeperFactory) and
	// the backup metrics (cairn_backup_*). Their gauges show only what
	// this replica observed while it leads (docs/metrics.md). Nil keeps no
	// metrics.
	Metrics prometheus.Registerer
	Log     *slog.Logger

	// CertLifetime is the lifetime of the TLS certificates the runtime
	// issues (pki.LeafLifetime when zero).
	CertLifetime time.Duration
	// LeaderLease is how long the leader's Lease lasts unrenewed: when
	// the leader is lost (its node with it), the other replica leads
	// within it. Zero takes DefaultLeaderLease.
	LeaderLease time.Duration
}

// DefaultLeaderLease is the runtime's leader Lease: short, so a leader
// lost together with a PostgreSQL primary adds at most that to the
// failover. The leader renews every RetryPeriod (2s) whatever the lease,
// so a shorter one costs the API server nothing more.
const DefaultLeaderLease = 8 * time.Second

// MinLeaderLease is the shortest leader Lease the runtime takes: the
// leader must renew in three quarters of it at a 2s retry period.
const MinLeaderLease = 4 * time.Second

// leaderTimings are client-go's renew deadline and retry period for a
// lease: the leader steps down after three quarters of the lease without
// a renewal, a quarter before another replica may take over, and renews
// every 2s (a quarter of the lease when shorter).
func leaderTimings(lease time.Duration) (renew, retry time.Duration) {
	return lease * 3 / 4, min(2*time.Second, lease/4)
}

// Agent is the runtime of one cluster: a leader election, the keeper of
// the cluster's kind and its backups.
type Agent struct {
	cfg     Config
	client  kubernetes.Interface
	keeper  Keeper
	backups *Backups
	leader  *leaderMetrics
	// leading is held by lead: a new term's lead starts once the last
	// one's passes and backups have stopped and its metrics forgot what
	// it observed.
	leading sync.Mutex
	// statusWarned: an unreadable backup status was logged once, at Warn.
	statusWarned atomic.Bool
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
	var leader *leaderMetrics
	if cfg.Metrics != nil {
		if metrics, err = NewBackupMetrics(cfg.Metrics, cfg.Cluster); err != nil {
			return nil, fmt.Errorf("runtime of %s: %w", cfg.Cluster, err)
		}
		if leader, err = newLeaderMetrics(cfg.Metrics, cfg.Cluster, cfg.Kind); err != nil {
			return nil, fmt.Errorf("runtime of %s: %w", cfg.Cluster, err)
		}
	}
	return &Agent{cfg: cfg, client: client, keeper: k, leader: leader,
		backups: &Backups{Client: client, Namespace: cfg.Namespace, Cluster: cfg.Cluster, Source: k.BackupSource,
			Metrics: metrics, Log: cfg.Log}}, nil
}

// Run takes part in the leader election on the Lease <cluster>-runtime
// and, while leading, makes a pass every interval. It returns when ctx
// ends, once a pass that was running has ended.
func (a *Agent) Run(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: contract.Runtime(a.cfg.Cluster), Namespace: a.cfg.Namespace},
		Client:     a.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: a.cfg.Identity},
	}
	lease := a.cfg.LeaderLease
	if lease == 0 {
		lease = DefaultLeaderLease
	}
	if lease < MinLeaderLease {
		return fmt.Errorf("leader lease %s: shorter than %s", lease, MinLeaderLease)
	}
	renew, retry := leaderTimings(lease)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		// The lease is not released on shutdown: client-go would release
		// it while a pass may still be running. A new leader takes over
		// when it expires.
		Lock: lock, ReleaseOnCancel: false,
		LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: a.lead,
			OnStoppedLeading: func() {
				a.leader.set(false) // at once; lead forgets the rest when its pass ends
				a.cfg.Log.Info("stopped leading", "identity", a.cfg.Identity)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	for ctx.Err() == nil {
		le.Run(ctx) // returns when leadership is lost; stand again
	}
	a.leading.Lock() // the last lead has returned
	a.leading.Unlock()
	return nil
}

func (a *Agent) lead(ctx context.Context) {
	a.leading.Lock()
	defer a.leading.Unlock()
	if ctx.Err() != nil {
		return // lost already, while the last term's lead ended
	}
	a.cfg.Log.Info("leading", "identity", a.cfg.Identity, "cluster", a.cfg.Cluster)
	a.leader.set(true)
	defer a.stepDown() // after the backups below have stopped
	// Backups run beside the passes, on their own schedule, and stop with
	// the leadership.
	backups := make(chan struct{})
	go func() { defer close(backups); a.backups.Run(ctx) }()
	defer func() { <-backups }()
	t := time.NewTicker(a.keeper.Interval())
	defer t.Stop()
	backupKnown := false
	for {
		if err := a.keeper.Pass(ctx); err != nil && ctx.Err() == nil {
			a.cfg.Log.Error("runtime pass failed", "err", err.Error())
		}
		if !backupKnown {
			backupKnown = a.knowLastBackup(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
