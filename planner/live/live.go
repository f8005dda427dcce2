package live

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// The apiVersion and kind of an observed-state file.
const (
	APIVersion = "cairn.dev/v1alpha1"
	Kind       = "LiveState"
)

// Snapshot is what runs, per cluster.
type Snapshot struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Clusters   []Cluster `json:"clusters"`
}

// Find returns the observed cluster of that kind and name, or nil when
// nothing of it is deployed.
func (s *Snapshot) Find(kind, name string) *Cluster {
	if s == nil {
		return nil
	}
	for i := range s.Clusters {
		if s.Clusters[i].Kind == kind && s.Clusters[i].Name == name {
			return &s.Clusters[i]
		}
	}
	return nil
}

// Cluster is one deployed cluster.
type Cluster struct {
	// Kind is the cluster's spec kind, as spec.Ref.Kind names it.
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// StatefulSet is the cluster's StatefulSet as the API server has it.
	StatefulSet StatefulSet `json:"statefulSet"`
	// Members are the cluster's pods, one per StatefulSet ordinal that
	// exists, with what the runtime knows of each.
	Members []Member `json:"members"`
	// Storage is the smallest size the members' volume claims request.
	Storage string `json:"storage"`
	// Capacity is the smallest capacity the members' volumes report; empty
	// when none reports one (then Storage stands for it).
	Capacity string `json:"capacity,omitempty"`
	// Backup is the backup policy the runtime runs and its last success.
	Backup *Backup `json:"backup,omitempty"`
	// SynchronousStandbys is PostgreSQL's current number of synchronous
	// standbys.
	SynchronousStandbys int `json:"synchronousStandbys,omitempty"`
	// ClusterVersion is etcd's cluster version ("3.4"), as etcd reports it.
	ClusterVersion string `json:"clusterVersion,omitempty"`
	// Downgrade is etcd's downgrade, as the runtime reports it; nil when
	// it reports none.
	Downgrade *EtcdDowngrade `json:"downgrade,omitempty"`
	// Compaction is the etcd compaction policy the rendered config sets;
	// nil when it sets none (the runtime does not compact).
	Compaction *Compaction `json:"compaction,omitempty"`
	// SpaceQuota is the etcd space quota the rendered config sets, in
	// bytes; empty when it sets none (etcd's default, 2 GiB).
	SpaceQuota string `json:"spaceQuota,omitempty"`
	// TLS is the TLS mode the rendered config sets
	// (contract.TLSModes); empty when it sets none (off).
	TLS string `json:"tls,omitempty"`
	// TLSIssuer is the cert-manager issuer the rendered config names
	// (contract.KeyTLSIssuer*); nil when the runtime issues the
	// certificates.
	TLSIssuer *contract.IssuerRef `json:"tlsIssuer,omitempty"`
	// Network says whether the rendered config restricts who reaches the
	// members (contract.NetworkModes); empty when it says nothing (open).
	Network string `json:"network,omitempty"`
	// Runtime is the runtime's Deployment as the API server has it; the
	// zero value (omitted) for one rendered before cairn hardened it, or
	// none at all.
	Runtime Runtime `json:"runtime,omitzero"`
	// Alarms are the alarms etcd raised (NOSPACE, CORRUPT), as the
	// runtime last reported them.
	Alarms []Alarm `json:"alarms,omitempty"`
	// Bootstrap is the bootstrap mode of the rendered config the cluster
	// runs with: "new" until a step after the create step is synced.
	Bootstrap string `json:"bootstrap,omitempty"`
	// Parameters are the spec's PostgreSQL parameters as the rendered
	// postgresql.conf sets them, name to value as written there (quoted).
	Parameters map[string]string `json:"parameters,omitempty"`
	// ConfigRevision is the revision of that rendered config
	// (contract.KeyConfigRevision); empty before the first one.
	ConfigRevision string `json:"configRevision,omitempty"`
	// QuorumLost is set while the runtime reports an etcd cluster's
	// quorum lost.
	QuorumLost *QuorumLoss `json:"quorumLost,omitempty"`
	// RecoverDone is the ID of the last recovery request (an EtcdRecover
	// step) the runtime carried out, RecoverRefused the last one it
	// refused because quorum had come back.
	RecoverDone    string `json:"recoverDone,omitempty"`
	RecoverRefused string `json:"recoverRefused,omitempty"`
	// Recovering is the recovery ID the rendered config carries (a merged
	// EtcdRecover step's, until a later step renders the config again).
	Recovering string `json:"recovering,omitempty"`
	// UpgradeCheck is the cluster's pre-flight pg_upgrade --check Job (a
	// merged PostgresUpgradeCheck step's); nil when there is none.
	UpgradeCheck *UpgradeCheck `json:"upgradeCheck,omitempty"`
	// SwitchoverServed is the ID of the last spec.switchover request a
	// merged step carried (contract.KeySwitchoverServed in the rendered
	// config); empty when none was.
	SwitchoverServed string `json:"switchoverServed,omitempty"`
}

// The outcomes of an UpgradeCheck; empty while the Job runs.
const (
	UpgradeCheckPassed = "passed"
	UpgradeCheckFailed = "failed"
)

// UpgradeCheck is a major upgrade's pre-flight Job as the API server has
// it.
type UpgradeCheck struct {
	// From and To are the majors it checks (its contract.LabelUpgrade*
	// labels); StorageLocation the backup location it reads, Scratch
	// its scratch volume's size, ScratchClaim whether that volume is a
	// claim of its own (a generic ephemeral volume of ScratchClass, the
	// cluster's default class when empty) rather than an emptyDir on the
	// node's disk, and Images its containers' images, as rendered.
	From            int               `json:"from"`
	To              int               `json:"to"`
	StorageLocation string            `json:"storageLocation,omitempty"`
	Scratch         string            `json:"scratch,omitempty"`
	ScratchClaim    bool              `json:"scratchClaim,omitempty"`
	ScratchClass    string            `json:"scratchClass,omitempty"`
	Images          map[string]string `json:"images,omitempty"`
	// Result is UpgradeCheckPassed or UpgradeCheckFailed once the Job
	// finished; empty while it runs.
	Result string `json:"result,omitempty"`
	// Reason is pg_upgrade's refusal (its pod's termination message) or
	// why the Job failed, when it did.
	Reason string `json:"reason,omitempty"`
}

// QuorumLoss is an etcd cluster's lost quorum, as the runtime reports it.
type QuorumLoss struct {
	// Since is when the runtime saw quorum lost.
	Since Timestamp `json:"since"`
	// Long: when observed, it had been lost for longer than the observer's
	// recovery delay (contract.EtcdRecoverAfter unless configured), after
	// which the planner proposes a recovery step. Observed once rather
	// than as a running age, so the observed state changes once.
	Long bool `json:"long,omitempty"`
	// Revision is the highest store revision the runtime recorded while
	// the cluster had quorum: every write a recovery could lose is at or
	// below it.
	Revision int64 `json:"revision,omitempty"`
}

// StatefulSet is the part of a StatefulSet the planner reads.
type StatefulSet struct {
	Replicas int `json:"replicas"`
	// UpdatePartition: pods with an ordinal at or above it run the
	// template's version; the others keep theirs.
	UpdatePartition int `json:"updatePartition"`
	// Version is the database version of the pod template.
	Version string `json:"version"`
	// VolumeClaimStorage is the storage size in the volumeClaimTemplates;
	// empty means the same as the cluster's storage.
	VolumeClaimStorage string `json:"volumeClaimStorage,omitempty"`
	// UpgradeFrom is the PostgreSQL major the template's pg_upgrade init
	// container upgrades from, left in place after a major upgrade.
	UpgradeFrom int `json:"upgradeFrom,omitempty"`
	// Resources are the database container's requests and limits in the
	// pod template; nil when none are set.
	Resources *contract.Resources `json:"resources,omitempty"`
	// StorageClass is the storage class of the volumeClaimTemplates; empty
	// for the cluster's default.
	StorageClass string `json:"storageClass,omitempty"`
	// TemplateRevision is the template's contract.AnnotationTemplateRevision.
	TemplateRevision string `json:"templateRevision,omitempty"`
	// Images are the pod template's images by container name, init
	// containers too.
	Images map[string]string `json:"images,omitempty"`
	// ReadOnlyRoot: the template's database container has a read-only
	// root filesystem (false for a template rendered before cairn set
	// it).
	ReadOnlyRoot bool `json:"readOnlyRootFilesystem,omitempty"`
}

// Runtime is the part of the runtime's Deployment (contract.Runtime)
// the planner reads.
type Runtime struct {
	// ReadOnlyRoot: the runtime's container has a read-only root
	// filesystem (false for a Deployment rendered before cairn set it).
	ReadOnlyRoot bool `json:"readOnlyRootFilesystem,omitempty"`
	// NoMemoryLimit: the runtime's container has no memory limit (a
	// Deployment rendered before cairn set one). The zero value is a
	// bounded runtime, as a missing Deployment is rendered.
	NoMemoryLimit bool `json:"noMemoryLimit,omitempty"`
}

// Role is a member's role as the runtime (or etcd) reports it.
type Role string

// The roles.
const (
	// etcd
	RoleLeader   Role = "leader"
	RoleFollower Role = "follower"
	RoleLearner  Role = "learner"
	// RoleRemoved is an etcd pod whose member has left the membership (a
	// scale-in waiting for the StatefulSet to shrink).
	RoleRemoved Role = "removed"
	// PostgreSQL
	RolePrimary Role = "primary"
	RoleReplica Role = "replica"
	// RoleUnknown: the runtime cannot tell (the member is unreachable).
	RoleUnknown Role = "unknown"
)

// Member is one pod of a cluster.
type Member struct {
	// Name is the pod name, <cluster>-<ordinal>.
	Name    string `json:"name"`
	Version string `json:"version"`
	Ready   bool   `json:"ready"`
	// ReadySince is when the member last became ready (its pod's Ready
	// condition); promotion-order policies measure soak time from it.
	ReadySince Timestamp `json:"readySince,omitempty"`
	Role       Role      `json:"role"`
	// DataLost marks an etcd member whose pod came back with an empty data
	// directory; the runtime replaces it (remove, then re-add).
	DataLost bool `json:"dataLost,omitempty"`
	// TemplateRevision is the pod's contract.AnnotationTemplateRevision:
	// the rolling restart it last restarted for.
	TemplateRevision string `json:"templateRevision,omitempty"`
	// ConfigRevision is the PostgreSQL config revision the member has
	// loaded, as the runtime reports it.
	ConfigRevision string `json:"configRevision,omitempty"`
	// PendingRestart lists the parameters the member has read from its
	// config file but applies only at a restart.
	PendingRestart []string `json:"pendingRestart,omitempty"`
	// TLS: the member served TLS with its cluster's server certificate,
	// verified by the runtime, when it last checked (a PostgreSQL
	// member's config, an etcd member's client port).
	TLS bool `json:"tls,omitempty"`
	// PeerTLS: an etcd member's peers reach it over TLS only (every peer
	// URL it advertises is https), as the runtime last reported.
	PeerTLS bool `json:"peerTLS,omitempty"`
	// DBSize is an etcd member's database file size in bytes, DBSizeInUse
	// the part that holds data (the rest a defragmentation gives back),
	// as the runtime last reported them; 0 when unknown.
	DBSize      int64 `json:"dbSize,omitempty"`
	DBSizeInUse int64 `json:"dbSizeInUse,omitempty"`
	// SpaceQuota is the space quota an etcd member reports running with
	// (etcd 3.6 on), in bytes; 0 when it does not say.
	SpaceQuota int64 `json:"spaceQuota,omitempty"`
	// Revision is an etcd member's store revision as it last reported it
	// to the runtime, observed only while quorum is lost (when it says
	// whose data is newest and does not move); 0 otherwise and when it did
	// not answer.
	Revision int64 `json:"revision,omitempty"`
}

// Ordinal returns the member's StatefulSet ordinal, parsed from its name.
func (m Member) Ordinal() int {
	i := strings.LastIndexByte(m.Name, '-')
	n, err := strconv.Atoi(m.Name[i+1:])
	if i < 0 || err != nil {
		return -1
	}
	return n
}

// IsVoter reports whether an etcd member votes.
func (m Member) IsVoter() bool { return m.Role == RoleLeader || m.Role == RoleFollower }

// Backup is the backup state of a cluster.
type Backup struct {
	Schedule        string `json:"schedule,omitempty"`
	TimeZone        string `json:"timeZone,omitempty"`
	StorageLocation string `json:"storageLocation,omitempty"`
	RetentionCount  int    `json:"retentionCount,omitempty"`
	RetentionMaxAge string `json:"retentionMaxAge,omitempty"`
	// LastSuccessful is when the newest complete, verified backup ended,
	// LastStarted when it started: how long a backup of the cluster takes,
	// which a backup taken ahead of a maintenance window starts by.
	LastSuccessful Timestamp `json:"lastSuccessful,omitempty"`
	LastStarted    Timestamp `json:"lastStarted,omitempty"`
	// LastRequest is the ID of the last on-demand backup request (a
	// TakeBackup step) the runtime completed.
	LastRequest string `json:"lastRequest,omitempty"`
	// LastID is the newest complete backup's ID, LastLocation where it is
	// (the policy's location when it was taken), and LastRevision its
	// store revision when it is an etcd snapshot.
	LastID       string `json:"lastID,omitempty"`
	LastLocation string `json:"lastLocation,omitempty"`
	LastRevision int64  `json:"lastRevision,omitempty"`
	// Stale: when observed, LastSuccessful was more than
	// contract.BackupFreshFor ago, too old for a step whose rollback
	// restores it. The planner then asks for a new backup (a TakeBackup
	// step under a new request ID) instead of waiting on the step's
	// freshness gate.
	Stale bool `json:"stale,omitempty"`
}

// Compaction is an etcd compaction policy: Mode periodic with Retention
// a duration, or revision with Retention a number of revisions.
type Compaction struct {
	Mode      string `json:"mode"`
	Retention string `json:"retention"`
	// Applied: the runtime reports that it runs this policy.
	Applied bool `json:"applied,omitempty"`
}

// Alarm is one alarm etcd raised on a member.
type Alarm struct {
	// Member names the member; empty when the runtime could not tell.
	Member string `json:"member,omitempty"`
	// Alarm is NOSPACE, CORRUPT or another name etcd gives.
	Alarm string `json:"alarm"`
	// Since is when the runtime first saw it.
	Since Timestamp `json:"since,omitempty"`
}

// Timestamp is an RFC 3339 time as written.
type Timestamp string

// UnmarshalScalar implements strictyaml.ScalarUnmarshaler.
func (t *Timestamp) UnmarshalScalar(s strictyaml.Scalar) error {
	if _, err := time.Parse(time.RFC3339, s.Value); err != nil {
		return fmt.Errorf("must be an RFC 3339 time such as 2026-11-30T02:00:00Z, got %s", strictyaml.Quote(s.Value))
	}
	*t = Timestamp(s.Value)
	return nil
}

// Time returns the time; zero when unset.
func (t Timestamp) Time() time.Time {
	v, _ := time.Parse(time.RFC3339, string(t))
	return v
}
