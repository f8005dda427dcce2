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

	// One-shot requests of merged steps, by step ID.
	KeyRequestSwitchoverID   = "request.switchover.id"
	KeyRequestSwitchoverTo   = "request.switchover.to"
	KeyRequestRemoveMemberID = "request.remove-member.id"
	KeyRequestRemoveMember   = "request.remove-member.member"
	KeyRequestBackupID       = "request.backup.id"
)

// Values of KeyBootstrap.
const (
	BootstrapNew      = "new"
	BootstrapExisting = "existing"
)

// RestoreLatest, as KeyRestoreBackup, names the newest backup.
const RestoreLatest = "latest"
