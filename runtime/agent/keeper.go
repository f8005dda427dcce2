package agent

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// Keeper keeps the runtime-owned state of one kind of cluster while the
// agent leads: one implementation per kind, each in files of its own
// (Membership for etcd, Roles for PostgreSQL). The agent runs the leader
// election, calls Pass every Interval and takes backups from
// BackupSource; it knows nothing else of the kind.
type Keeper interface {
	// Pass looks at the cluster once, makes the changes that cannot wait
	// for a pull request, and reports them (status, Events, the kind's
	// metrics).
	Pass(ctx context.Context) error
	// BackupSource picks the member a backup is taken from now, and names
	// the kind the backup's manifest records (spec.EtcdKind,
	// spec.PostgresKind).
	BackupSource(ctx context.Context) (src backup.Source, kind string, err error)
	// Interval is the time between passes.
	Interval() time.Duration
}

// KeeperFactory builds the keeper of cfg's cluster for one kind (Etcd,
// Postgres), its kind's metrics, and only those, registered with
// cfg.Metrics when set. cmd/cairn's table of kinds names each kind's.
type KeeperFactory func(client kubernetes.Interface, cfg Config) (Keeper, error)

var (
	_ KeeperFactory = Etcd
	_ KeeperFactory = Postgres
)
