package agent

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// Keeper keeps the runtime-owned state of one kind of cluster while the
// agent leads: one implementation per kind, each in a package of its own
// (runtime/agent/etcd's Membership, runtime/agent/postgres's Roles).
// The agent runs the leader election, calls Pass every Interval and
// takes backups from BackupSource; it knows nothing else of the kind.
type Keeper interface {
	// Pass looks at the cluster once, makes the changes that cannot wait
	// for a pull request, and reports them (status, Events, the kind's
	// metrics).
	Pass(ctx context.Context) error
	// BackupSource picks the member a backup is taken from now, and names
	// the kind the backup's manifest records (the spec's kind).
	BackupSource(ctx context.Context) (src backup.Source, kind string, err error)
	// Interval is the time between passes.
	Interval() time.Duration
}

// KeeperFactory builds the keeper of cfg's cluster for one kind, its
// kind's metrics, and only those, registered with cfg.Metrics when set.
// Each kind's package builds one from its own config (etcd.Config.Keeper,
// postgres.Config.Keeper); cmd/cairn's table of kinds names each kind's.
type KeeperFactory func(client kubernetes.Interface, cfg Config) (Keeper, error)

// Observer is a Keeper whose metrics hold what the leading replica
// observed: the agent has it forget them when the replica stops leading,
// so a standby exports no gauge that looks like a fact.
type Observer interface {
	// ForgetObservations drops what the keeper's metrics observed.
	ForgetObservations()
}

// StatusHeartbeat is how often a keeper writes its unchanged status
// again, so its observedAt says the runtime still looks.
const StatusHeartbeat = time.Minute
