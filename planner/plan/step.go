package plan

// Step is one small, safe change, rendered as one overlay and reviewed as
// one pull request.
type Step struct {
	// ID is stable: the same change planned again gets the same ID.
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// Summary is one line for a person.
	Summary string `json:"summary"`
	// Disruptive steps interrupt clients (a restart of a single member, a
	// switchover, an offline upgrade); a maintenance window holds them.
	Disruptive bool `json:"disruptive"`
	// Reversible is false for steps that cannot be undone by another plan
	// (a major upgrade, a storage expansion, the last member of an etcd
	// minor upgrade).
	Reversible bool `json:"reversible"`
	// Rollback says how to undo the step, or what to do instead.
	Rollback string `json:"rollback"`
	// Gates must hold before the step starts and after it is applied.
	Gates  []Gate `json:"gates"`
	Params Params `json:"params"`
	// Decisions are the policies' verdicts on this step.
	Decisions []Decision `json:"decisions,omitempty"`
}

// Phase says when a gate is checked.
type Phase string

// The phases of a gate.
const (
	Before Phase = "before"
	After  Phase = "after"
)

// GateKind names a condition on the live state.
type GateKind string

// The gates cairn checks.
const (
	// GateClusterHealthy: every member ready; etcd has a leader and quorum,
	// PostgreSQL exactly one primary with every replica streaming.
	GateClusterHealthy GateKind = "ClusterHealthy"
	// GateMemberReady: Member is ready.
	GateMemberReady GateKind = "MemberReady"
	// GateMemberVersion: Member runs Version.
	GateMemberVersion GateKind = "MemberVersion"
	// GateMemberVoter: etcd Member is a voting member (a learner that
	// caught up was promoted).
	GateMemberVoter GateKind = "MemberVoter"
	// GateMemberRemoved: etcd Member is no longer in the membership.
	GateMemberRemoved GateKind = "MemberRemoved"
	// GateNotLeader: etcd Member does not lead (leadership moved away).
	GateNotLeader GateKind = "NotLeader"
	// GateClusterVersion: etcd's cluster version is Version (major.minor).
	GateClusterVersion GateKind = "ClusterVersion"
	// GateReplicaStreaming: PostgreSQL Member streams from the primary.
	GateReplicaStreaming GateKind = "ReplicaStreaming"
	// GatePrimary: PostgreSQL Member is the primary.
	GatePrimary GateKind = "Primary"
	// GateBackupFresh: a verified backup younger than MaxAge exists.
	GateBackupFresh GateKind = "BackupFresh"
	// GateUpgradeChecked: the pre-flight Job of the major upgrade to
	// Version's major, from the major the cluster runs, passed:
	// pg_upgrade --check found nothing to refuse.
	GateUpgradeChecked GateKind = "UpgradeChecked"
	// GateUpgradeCheckRemoved: the cluster has no pre-flight check Job.
	GateUpgradeCheckRemoved GateKind = "UpgradeCheckRemoved"
	// GateBackupConfigured: the runtime runs the backup schedule of the spec.
	GateBackupConfigured GateKind = "BackupConfigured"
	// GateStorageCapacity: every member's volume reports at least Quantity.
	GateStorageCapacity GateKind = "StorageCapacity"
	// GateStatefulSetSettled: the StatefulSet has as many pods as replicas
	// and no rollout in progress.
	GateStatefulSetSettled GateKind = "StatefulSetSettled"
	// GateSecretsExist: the Secrets the cluster's manifests refer to exist
	// (PostgreSQL: <name>-superuser and <name>-replication, key password).
	GateSecretsExist GateKind = "SecretsExist"
	// GateMaintenanceWindow: the cluster's maintenance window is open.
	GateMaintenanceWindow GateKind = "MaintenanceWindow"
	// GateBackupEndsInWindow: a backup started now ends inside the
	// cluster's maintenance window if it takes as long as the last
	// complete backup did, with a margin (gates.BackupLead); with no backup
	// measured yet, the window is open now. The gate of a TakeBackup step
	// that a step held for the window relies on: the backup is taken for
	// the window it is used in, however long it runs beside the window.
	GateBackupEndsInWindow GateKind = "BackupEndsInWindow"
	// GateMemberRestarted: the member runs the pod template's revision
	// Revision and is ready.
	GateMemberRestarted GateKind = "MemberRestarted"
	// GateConfigApplied: the member (every member when Member is empty)
	// has loaded PostgreSQL config revision Revision and nothing waits for
	// a restart.
	GateConfigApplied GateKind = "ConfigApplied"
	// GateCompactionApplied: the etcd runtime reports that it runs the
	// compaction policy of the step (or of the spec).
	GateCompactionApplied GateKind = "CompactionApplied"
	// GateQuorumLost: the etcd cluster's quorum is still lost.
	GateQuorumLost GateKind = "QuorumLost"
	// GateRecoveryStarted: the runtime restarted the members for the
	// recovery request Revision (a merged EtcdRecover step's ID).
	GateRecoveryStarted GateKind = "RecoveryStarted"
	// GateEtcdDowngrade: etcd reports a downgrade of its cluster version
	// to Version (major.minor) enabled, with every member's storage
	// migrated to it; with Version empty, no downgrade enabled.
	GateEtcdDowngrade GateKind = "EtcdDowngrade"
	// GateTLSServed: every member serves TLS with its cluster's server
	// certificate, as the runtime verified it.
	GateTLSServed GateKind = "TLSServed"
	// GateMemberPeerTLS: etcd member Member's peers reach it over TLS
	// only: every peer URL it advertises is https.
	GateMemberPeerTLS GateKind = "MemberPeerTLS"
	// GateQuorum: more than half of the etcd cluster's voting members
	// answer in their role (leader or follower), ready or not; with
	// Member set, without counting Member (the member a step restarts
	// keeps no quorum while it is down). What a step
	// that relieves a fault needs where the fault fails every member's
	// readiness (etcd answers /health false while NOSPACE is raised).
	GateQuorum GateKind = "Quorum"
	// GateMemberRejoined: Member runs pod template revision Revision and
	// answers in its role again (an etcd voter, a PostgreSQL primary or
	// replica), ready or not: the after-gate of a restart that relieves a
	// fault which keeps members unready until every member has restarted.
	GateMemberRejoined GateKind = "MemberRejoined"
)

// Gate is a condition on the live state.
type Gate struct {
	Kind GateKind `json:"kind"`
	When Phase    `json:"when"`
	// Member, Version, Quantity, MaxAge and Revision qualify the
	// condition, per kind.
	Member   string `json:"member,omitempty"`
	Version  string `json:"version,omitempty"`
	Quantity string `json:"quantity,omitempty"`
	MaxAge   string `json:"maxAge,omitempty"`
	Revision string `json:"revision,omitempty"`
	// Below, on a ClusterHealthy gate, judges only the members at lower
	// ordinals (those above are being removed); 0 judges every member.
	Below int `json:"below,omitempty"`
	// Description says the condition in words.
	Description string `json:"description"`
}

// Verdict is a policy's answer on a step.
type Verdict string

// The verdicts.
const (
	Allow Verdict = "Allow"
	// Hold: the step may go ahead later (outside a maintenance window, say).
	Hold Verdict = "Hold"
	// Deny: the step must not go ahead as planned.
	Deny Verdict = "Deny"
)

// Decision is one policy's verdict on one step.
type Decision struct {
	Policy  string  `json:"policy"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason,omitempty"`
	// AutoMerge is set by a policy that lets cairn merge the step's pull
	// request itself (see Step.AutoMerge).
	AutoMerge bool `json:"autoMerge,omitempty"`
}
