package contract

import "time"

// The recovery of an etcd cluster that lost quorum: a merged EtcdRecover
// step writes these keys into the rendered ConfigMap <cluster>-cairn. The
// runtime restarts the members once per recovery ID; each member's
// instance manager carries the recovery out on its own data once, and
// records that it did in a marker file beside its data directory
// (EtcdRecoveryMarker).
const (
	// KeyRecoverID is the recovery's ID: its step's ID.
	KeyRecoverID = "recover.id"
	// KeyRecoverMode is EtcdRecoverFromSnapshot or EtcdRecoverFromMember.
	KeyRecoverMode = "recover.mode"
	// KeyRecoverSeed names the member the new cluster starts from: the one
	// that restores the snapshot, or the one whose data is kept.
	KeyRecoverSeed = "recover.seed"
	// KeyRecoverToken is the new cluster's initial cluster token (snapshot
	// mode).
	KeyRecoverToken = "recover.token"
	// KeyRecoverStorageLocation, KeyRecoverCluster and KeyRecoverBackup
	// name the snapshot (snapshot mode).
	KeyRecoverStorageLocation = "recover.storage-location"
	KeyRecoverCluster         = "recover.cluster"
	KeyRecoverBackup          = "recover.backup"
)

// Values of KeyRecoverMode.
const (
	// EtcdRecoverFromSnapshot: the seed restores the snapshot as a new
	// one-member cluster (a new cluster ID); the other members move their
	// data aside and join it one at a time.
	EtcdRecoverFromSnapshot = "snapshot"
	// EtcdRecoverFromMember: the seed keeps its data and starts once with
	// --force-new-cluster, which makes it the only member (the cluster ID
	// stays); the other members move their data aside and join it one at
	// a time.
	EtcdRecoverFromMember = "member"
)

// EtcdRecoveryMarker names the file <data dir>.cairn-recovered, beside a
// member's data directory (on the same volume), that holds the ID of the
// last recovery carried out on that member's data.
const EtcdRecoveryMarker = "cairn-recovered"

// EtcdRecoverAfter is how long quorum must have been lost before the
// planner proposes a recovery step, unless the spec says otherwise
// (spec.recovery.proposeAfter).
const EtcdRecoverAfter = 10 * time.Minute
