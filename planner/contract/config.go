package contract

// Keys of the ConfigMap <cluster>-cairn (see ConfigMap): what the
// renderer writes from Git and the instance managers and the runtime read.
const (
	// KeyBootstrap is BootstrapNew while the create step runs, then
	// BootstrapExisting, which can never create a second cluster.
	KeyBootstrap = "bootstrap"
	// KeyInitialMembers is how many members the create step bootstraps.
	KeyInitialMembers = "initial-members"
	// KeyInitialClusterToken is etcd's token for that bootstrap.
	KeyInitialClusterToken = "initial-cluster-token"
	// KeySynchronousStandbys is PostgreSQL's number the runtime keeps.
	KeySynchronousStandbys = "synchronous-standbys"

	// The backup policy the runtime runs.
	KeyBackupSchedule        = "backup.schedule"
	KeyBackupTimeZone        = "backup.time-zone"
	KeyBackupStorageLocation = "backup.storage-location"
	KeyBackupRetentionCount  = "backup.retention.count"
	KeyBackupRetentionMaxAge = "backup.retention.max-age"

	// The backup a create step starts the cluster from.
	KeyRestoreStorageLocation = "restore.storage-location"
	KeyRestoreCluster         = "restore.cluster"
	KeyRestoreBackup          = "restore.backup"
	// KeyRestoreTarget is how far a PostgreSQL restore replays archived
	// WAL past its base backup: an RFC 3339 time, or RestoreLatest for
	// all of it. Absent, the restore ends at the backup's end.
	KeyRestoreTarget = "restore.target"

	// One-shot requests of merged steps, by step ID.
	KeyRequestSwitchoverID   = "request.switchover.id"
	KeyRequestSwitchoverTo   = "request.switchover.to"
	KeyRequestRemoveMemberID = "request.remove-member.id"
	KeyRequestRemoveMember   = "request.remove-member.member"
	KeyRequestBackupID       = "request.backup.id"

	// KeySwitchoverServed is the ID of the last spec.switchover request
	// (spec.Switchover.ID) whose step was merged: every later step
	// renders it again, so the planner never plans that request twice,
	// whoever is primary later. The runtime does not read it.
	KeySwitchoverServed = "switchover.served"
)

// Values of KeyBootstrap.
const (
	BootstrapNew      = "new"
	BootstrapExisting = "existing"
)

// RestoreLatest, as KeyRestoreBackup, names the newest backup; as
// KeyRestoreTarget, the end of the archived WAL.
const RestoreLatest = "latest"

// PostgresWALSocket is the instance manager's WAL socket in a member's
// pod (runtime/instance/postgres.WALServer), in the server's socket folder.
const PostgresWALSocket = "/var/run/postgresql/.s.cairn-wal"

// PostgresWALCommand is the command archive_command and restore_command
// run (`cairn instance wal push|fetch %f %p`): the cairn binary the pod's
// init container installs, against PostgresWALSocket.
const PostgresWALCommand = "/cairn-bin/cairn instance wal --socket " + PostgresWALSocket

// PostgresArchiveSettings are the postgresql.conf settings of a cluster
// with a backup policy: every completed WAL segment archived to the
// backup location through the instance manager, and a segment switched
// at least once a minute when anything was written (archive_timeout), so
// an idle cluster's newest writes are archived within about a minute.
var PostgresArchiveSettings = map[string]string{
	"archive_mode":    "on",
	"archive_command": PostgresWALCommand + " push %f %p",
	"archive_timeout": "60s",
}
