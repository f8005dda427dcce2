package planner

// The rules behind refusals. Each refusal names one, so a person can look
// it up in docs/planner-rules.md.
const (
	// RuleEtcdSizeRange: an etcd cluster has 1 to 7 voting members.
	RuleEtcdSizeRange = "etcd-size-range"
	// RuleEtcdSizeEven: an even size tolerates no more failures than the
	// odd size below it; even sizes occur only between steps.
	RuleEtcdSizeEven = "etcd-size-even"
	// RuleEtcdDowngrade: etcd cannot go back across minor versions.
	RuleEtcdDowngrade = "etcd-minor-downgrade"
	// RuleEtcdMinorSkip: a rolling upgrade in flight skips a minor version
	// (the template is more than one minor ahead of a member).
	RuleEtcdMinorSkip = "etcd-minor-skip"
	// RulePostgresInstancesRange: a PostgreSQL cluster has 1 to 16 members.
	RulePostgresInstancesRange = "postgres-instances-range"
	// RulePostgresMajorDowngrade: pg_upgrade only goes forward.
	RulePostgresMajorDowngrade = "postgres-major-downgrade"
	// RulePostgresMajorNeedsBackup: a major upgrade is gated on a fresh
	// backup, so the spec must configure backups.
	RulePostgresMajorNeedsBackup = "postgres-major-upgrade-needs-backup"
	// RuleStorageShrink: volumes only grow.
	RuleStorageShrink = "storage-shrink"
	// RuleUnknownVersion: a member runs a version cairn cannot parse.
	RuleUnknownVersion = "observed-version-unknown"
	// RuleSpecRemoved: a running cluster's spec was deleted.
	RuleSpecRemoved = "spec-removed"
	// RuleUnknownKind: no strategy plans the cluster's kind.
	RuleUnknownKind = "unknown-kind"
)

// Limits of the planner's domain rules.
const (
	MaxEtcdSize          = 7
	MaxPostgresInstances = 16
	// MajorUpgradeBackupMaxAge is how fresh the backup gating a major
	// upgrade must be.
	MajorUpgradeBackupMaxAge = "6h"
)
