package planner

import "github.com/cairn-dev/cairn/planner/spec"

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
	// RuleEtcdUpgradeFloor: a rolling upgrade in flight moves members to
	// the next minor while one is still below the patch etcd's upgrade
	// guide requires first (the line's floor in
	// planner/spec/versions_table.go); cairn does not finish it, and a
	// person sets the template back so the members reach the floor.
	RuleEtcdUpgradeFloor = "etcd-upgrade-floor"
)

// Limits of the planner's domain rules.
const (
	MaxEtcdSize          = spec.MaxEtcdSize
	MaxPostgresInstances = spec.MaxPostgresInstances
	// MajorUpgradeBackupMaxAge is how fresh the backup gating a major
	// upgrade must be.
	MajorUpgradeBackupMaxAge = "6h"
)

// Rules of changes to what runs in the members' pods.
const (
	// RuleStorageClassImmutable: a StatefulSet's volume claims keep their
	// storage class.
	RuleStorageClassImmutable = "storage-class-immutable"
	// RulePostgresHotStandbyMixed: one change both raises and lowers
	// parameters a standby needs at least as high as its primary's; no
	// restart order is safe for both.
	RulePostgresHotStandbyMixed = "postgres-hot-standby-mixed"
)

// Rules of the backups that a plan's rollback restores.
const (
	// RuleBackupRetentionPinned: a shorter backup retention is refused while
	// a planned irreversible step (a PostgreSQL major upgrade, the last
	// member of an etcd minor upgrade) relies on its pre-step backup; the
	// runtime pins that backup once it is taken, and the retention may
	// shorten once the step is done.
	RuleBackupRetentionPinned = "backup-retention-deletes-pinned"
	// RuleEtcdMinorNeedsBackup: the last member of an etcd minor upgrade
	// cannot be undone (etcd raises its cluster version) and is gated on
	// a fresh snapshot, so the spec must configure backups.
	RuleEtcdMinorNeedsBackup = "etcd-minor-upgrade-needs-backup"
)

// PreStepBackupMaxAge is how fresh the backup must be that an
// irreversible step's rollback restores (a PostgreSQL major upgrade, the
// last member of an etcd minor upgrade): contract.BackupFreshFor, past
// which the observer reports the newest backup stale.
const PreStepBackupMaxAge = MajorUpgradeBackupMaxAge

// Rules of etcd's space.
const (
	// RuleEtcdSpaceQuotaBelowData: a lower spec.spaceQuota that the data
	// in use does not fit below with the runtime's margin
	// (contract.EtcdDisarmBelowPercent): the members would raise NOSPACE
	// as they restart and the runtime could not disarm it.
	RuleEtcdSpaceQuotaBelowData = "etcd-space-quota-below-data"
)

// Rules of the network.
const (
	// RuleUnknownNetwork: the rendered config names a network mode cairn
	// does not know; a person must look before cairn changes it.
	RuleUnknownNetwork = "unknown-network-mode"
)

// Rules of PostgreSQL's TLS.
const (
	// RulePostgresUnknownTLS: the rendered config names a TLS mode cairn
	// does not know; a person must look before cairn changes it.
	RulePostgresUnknownTLS = "postgres-unknown-tls-mode"
	// RulePostgresTLSIssuerNamespace: spec.tls.issuerRef without
	// metadata.namespace; the server certificate must name the Services
	// in the cluster's namespace.
	RulePostgresTLSIssuerNamespace = "postgres-tls-issuer-needs-namespace"
	// RulePostgresTLSIssuerChange: spec.tls.issuerRef changed on a
	// cluster that serves TLS: members and clients trust the CA of the
	// certificates they have, and moving to another CA would cut them off.
	RulePostgresTLSIssuerChange = "postgres-tls-issuer-change"
	// RuleEtcdUnknownTLS: the rendered config names a TLS mode cairn does
	// not know for an etcd cluster.
	RuleEtcdUnknownTLS = "etcd-unknown-tls-mode"
)

// Rules of etcd's TLS: PostgreSQL's issuer rules, for etcd's peer
// certificate (tlsissuer.go).
const (
	// RuleEtcdTLSIssuerNamespace: spec.tls.issuerRef without
	// metadata.namespace; the peer certificate must name the Services in
	// the cluster's namespace.
	RuleEtcdTLSIssuerNamespace = "etcd-tls-issuer-needs-namespace"
	// RuleEtcdTLSIssuerChange: spec.tls.issuerRef set, changed or removed
	// on a cluster that serves TLS: members trust the CA of the
	// certificates they hold, as peers and as servers.
	RuleEtcdTLSIssuerChange = "etcd-tls-issuer-change"
)

// RuleSwitchoverTarget: spec.switchover names no member of the cluster
// (validation refuses it first; a planner given an unvalidated spec
// refuses it too rather than guess).
const RuleSwitchoverTarget = "postgres-switchover-target"
