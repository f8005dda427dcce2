package plan

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
)

// Kind names what a step does. Each kind has one parameter struct in Params.
type Kind string

// The step kinds.
const (
	// CreateCluster deploys a new cluster at its spec's size and version.
	CreateCluster Kind = "CreateCluster"
	// ConfigureBackup changes the runtime's backup schedule, location or
	// retention.
	ConfigureBackup Kind = "ConfigureBackup"
	// TakeBackup asks the runtime for a backup now (before a major upgrade).
	TakeBackup Kind = "TakeBackup"
	// ExpandStorage grows every member's volume.
	ExpandStorage Kind = "ExpandStorage"
	// UpgradeMember moves one member to a new version by lowering the
	// StatefulSet's update partition by one.
	UpgradeMember Kind = "UpgradeMember"
	// ScaleIn removes the highest-ordinal pod from the StatefulSet.
	ScaleIn Kind = "ScaleIn"
	// EtcdAddMember adds one etcd member: as a learner that the runtime
	// promotes once it has caught up (etcd 3.4+), or as a voter on older
	// versions, which have no learners.
	EtcdAddMember Kind = "EtcdAddMember"
	// EtcdRemoveMember asks the runtime to remove one member from the etcd
	// membership, moving leadership away first.
	EtcdRemoveMember Kind = "EtcdRemoveMember"
	// PostgresAddReplica adds one replica cloned from the primary.
	PostgresAddReplica Kind = "PostgresAddReplica"
	// PostgresSwitchover asks the runtime to hand the primary role to a
	// caught-up replica without losing a committed transaction.
	PostgresSwitchover Kind = "PostgresSwitchover"
	// PostgresMajorUpgrade runs an offline pg_upgrade of the primary.
	PostgresMajorUpgrade Kind = "PostgresMajorUpgrade"
	// PostgresUpgradeCheck runs pg_upgrade --check before a major
	// upgrade's downtime, in a Job, on a restored copy of the newest base
	// backup: no member is touched.
	PostgresUpgradeCheck Kind = "PostgresUpgradeCheck"
	// PostgresSynchronousStandbys changes the number of synchronous
	// standbys.
	PostgresSynchronousStandbys Kind = "PostgresSynchronousStandbys"
	// RestartMember restarts one member with the pod template's current
	// revision by lowering the StatefulSet's update partition to its
	// ordinal; the first member of a rolling restart also changes the
	// template (resources, restart-only PostgreSQL parameters).
	RestartMember Kind = "RestartMember"
	// PostgresReloadParameters changes PostgreSQL parameters that take
	// effect on a reload; the runtime reloads every member and confirms.
	PostgresReloadParameters Kind = "PostgresReloadParameters"
	// EtcdConfigureCompaction changes how the runtime compacts etcd's
	// history; no member restarts.
	EtcdConfigureCompaction Kind = "EtcdConfigureCompaction"
	// SealBootstrap ends a cluster's creation: its rendered config stops
	// allowing members to bootstrap, so one that loses its data rejoins.
	SealBootstrap Kind = "SealBootstrap"
	// EtcdRecover brings an etcd cluster that lost quorum back as a new
	// cluster, from a snapshot or from the member whose data is newest;
	// the other members rejoin it with empty data.
	EtcdRecover Kind = "EtcdRecover"
	// EtcdDowngrade asks the runtime to enable etcd's downgrade of the
	// cluster version to the minor before (etcd 3.6 and later), or to
	// cancel one; the members then move one at a time (UpgradeMember).
	EtcdDowngrade Kind = "EtcdDowngrade"
	// PostgresConfigureTLS moves a PostgreSQL cluster one TLS mode on
	// (contract.TLSModes: off, accept, require): servers serve TLS, then
	// pg_hba admits only TLS. A reload, no restart.
	PostgresConfigureTLS Kind = "PostgresConfigureTLS"
	// RestrictNetwork renders the cluster's NetworkPolicy: its members
	// then admit only each other, the runtime and labelled clients.
	RestrictNetwork Kind = "RestrictNetwork"
	// HardenRuntime renders the runtime's Deployment with a read-only root
	// filesystem and its writable folders as volumes; no member restarts.
	HardenRuntime Kind = "HardenRuntime"
)

// Irreversible reports whether every step of kind k is irreversible: a
// storage expansion (volumes never shrink) and a PostgreSQL major upgrade
// (pg_upgrade rewrites the data directory). Steps of other kinds may be
// irreversible one at a time (Step.Reversible), such as the member that
// completes an etcd minor upgrade. An etcd recovery is irreversible too:
// the members' old data is set aside and the cluster starts anew.
func (k Kind) Irreversible() bool {
	return k == ExpandStorage || k == PostgresMajorUpgrade || k == EtcdRecover
}

// Params holds the parameters of a step: exactly the one field that
// matches the step's Kind is set.
type Params struct {
	CreateCluster               *CreateClusterParams               `json:"createCluster,omitempty"`
	ConfigureBackup             *ConfigureBackupParams             `json:"configureBackup,omitempty"`
	TakeBackup                  *TakeBackupParams                  `json:"takeBackup,omitempty"`
	ExpandStorage               *ExpandStorageParams               `json:"expandStorage,omitempty"`
	UpgradeMember               *UpgradeMemberParams               `json:"upgradeMember,omitempty"`
	ScaleIn                     *ScaleInParams                     `json:"scaleIn,omitempty"`
	EtcdAddMember               *EtcdAddMemberParams               `json:"etcdAddMember,omitempty"`
	EtcdRemoveMember            *EtcdRemoveMemberParams            `json:"etcdRemoveMember,omitempty"`
	PostgresAddReplica          *PostgresAddReplicaParams          `json:"postgresAddReplica,omitempty"`
	PostgresSwitchover          *PostgresSwitchoverParams          `json:"postgresSwitchover,omitempty"`
	PostgresMajorUpgrade        *PostgresMajorUpgradeParams        `json:"postgresMajorUpgrade,omitempty"`
	PostgresUpgradeCheck        *PostgresUpgradeCheckParams        `json:"postgresUpgradeCheck,omitempty"`
	PostgresSynchronousStandbys *PostgresSynchronousStandbysParams `json:"postgresSynchronousStandbys,omitempty"`
	SealBootstrap               *SealBootstrapParams               `json:"sealBootstrap,omitempty"`
	RestartMember               *RestartMemberParams               `json:"restartMember,omitempty"`
	PostgresReloadParameters    *ParameterChange                   `json:"postgresReloadParameters,omitempty"`
	EtcdConfigureCompaction     *EtcdConfigureCompactionParams     `json:"etcdConfigureCompaction,omitempty"`
	EtcdRecover                 *EtcdRecoverParams                 `json:"etcdRecover,omitempty"`
	EtcdDowngrade               *EtcdDowngradeParams               `json:"etcdDowngrade,omitempty"`
	PostgresConfigureTLS        *PostgresConfigureTLSParams        `json:"postgresConfigureTLS,omitempty"`
	RestrictNetwork             *RestrictNetworkParams             `json:"restrictNetwork,omitempty"`
	HardenRuntime               *HardenRuntimeParams               `json:"hardenRuntime,omitempty"`
}

// kinds is the one list of the step kinds, each with whether a Params
// holds its parameters. A new step kind adds its constant, its Params
// field and one line here.
var kinds = []struct {
	kind Kind
	has  func(Params) bool
}{
	{CreateCluster, func(p Params) bool { return p.CreateCluster != nil }},
	{ConfigureBackup, func(p Params) bool { return p.ConfigureBackup != nil }},
	{TakeBackup, func(p Params) bool { return p.TakeBackup != nil }},
	{ExpandStorage, func(p Params) bool { return p.ExpandStorage != nil }},
	{UpgradeMember, func(p Params) bool { return p.UpgradeMember != nil }},
	{ScaleIn, func(p Params) bool { return p.ScaleIn != nil }},
	{EtcdAddMember, func(p Params) bool { return p.EtcdAddMember != nil }},
	{EtcdRemoveMember, func(p Params) bool { return p.EtcdRemoveMember != nil }},
	{PostgresAddReplica, func(p Params) bool { return p.PostgresAddReplica != nil }},
	{PostgresSwitchover, func(p Params) bool { return p.PostgresSwitchover != nil }},
	{PostgresMajorUpgrade, func(p Params) bool { return p.PostgresMajorUpgrade != nil }},
	{PostgresSynchronousStandbys, func(p Params) bool { return p.PostgresSynchronousStandbys != nil }},
	{SealBootstrap, func(p Params) bool { return p.SealBootstrap != nil }},
	{RestartMember, func(p Params) bool { return p.RestartMember != nil }},
	{PostgresReloadParameters, func(p Params) bool { return p.PostgresReloadParameters != nil }},
	{EtcdConfigureCompaction, func(p Params) bool { return p.EtcdConfigureCompaction != nil }},
	{EtcdRecover, func(p Params) bool { return p.EtcdRecover != nil }},
	{EtcdDowngrade, func(p Params) bool { return p.EtcdDowngrade != nil }},
	{PostgresConfigureTLS, func(p Params) bool { return p.PostgresConfigureTLS != nil }},
	{RestrictNetwork, func(p Params) bool { return p.RestrictNetwork != nil }},
	{HardenRuntime, func(p Params) bool { return p.HardenRuntime != nil }},
	{PostgresUpgradeCheck, func(p Params) bool { return p.PostgresUpgradeCheck != nil }},
}

// Kinds are every step kind, in the order they are declared.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i, k := range kinds {
		out[i] = k.kind
	}
	return out
}

// set lists the kinds whose parameters are present.
func (p Params) set() []Kind {
	var out []Kind
	for _, k := range kinds {
		if k.has(p) {
			out = append(out, k.kind)
		}
	}
	return out
}

func (p Params) check(k Kind) error {
	set := p.set()
	if len(set) != 1 || set[0] != k {
		names := make([]string, len(set))
		for i, s := range set {
			names[i] = string(s)
		}
		return fmt.Errorf("kind %q needs exactly its own parameters, got [%s]", k, strings.Join(names, ", "))
	}
	return nil
}

// CreateClusterParams: deploy a new cluster.
type CreateClusterParams struct {
	Version string `json:"version"`
	Members int    `json:"members"`
	Storage string `json:"storage"`
	// RestoreFrom, when set, starts the cluster from a backup.
	RestoreFrom *RestoreSource `json:"restoreFrom,omitempty"`
	// TemplateRevision is the pod template's revision annotation at
	// creation: the revision a rolling restart back to the creation's
	// template is planned under, so that the members created with it do
	// not restart for it. Empty in plans made before it was recorded.
	TemplateRevision string `json:"templateRevision,omitempty"`
}

// RestoreSource is the backup a new cluster starts from.
type RestoreSource struct {
	StorageLocation string `json:"storageLocation"`
	Cluster         string `json:"cluster"`
	// Backup is a backup ID or "latest".
	Backup string `json:"backup"`
	// TargetTime is how far PostgreSQL replays archived WAL past the
	// backup: an RFC 3339 time or "latest"; empty stops at its end.
	TargetTime string `json:"targetTime,omitempty"`
	// ForeignBucket: the backup is in a bucket that is not the cluster's
	// own, which the spec trusts (spec.restoreFrom.trustForeignBucket);
	// the pull request says so.
	ForeignBucket bool `json:"foreignBucket,omitempty"`
}

// BackupSettings is a backup policy as the runtime runs it.
type BackupSettings struct {
	Schedule        string `json:"schedule"`
	TimeZone        string `json:"timeZone"`
	StorageLocation string `json:"storageLocation"`
	RetentionCount  int    `json:"retentionCount,omitempty"`
	RetentionMaxAge string `json:"retentionMaxAge,omitempty"`
}

// ConfigureBackupParams: change the backup policy. To is nil when backups
// are turned off; From is nil when they were off.
type ConfigureBackupParams struct {
	From *BackupSettings `json:"from,omitempty"`
	To   *BackupSettings `json:"to,omitempty"`
}

// TakeBackupParams: take a backup now.
type TakeBackupParams struct {
	Reason string `json:"reason"`
}

// ExpandStorageParams: grow every member's volume.
type ExpandStorageParams struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// UpgradeMemberParams: move Member to version To by setting the
// StatefulSet's update partition to Partition (its ordinal). The first
// member of each hop also changes the pod template's version.
type UpgradeMemberParams struct {
	Member    string `json:"member"`
	Ordinal   int    `json:"ordinal"`
	From      string `json:"from"`
	To        string `json:"to"`
	Partition int    `json:"partition"`
	Replicas  int    `json:"replicas"`
	// Template, on the first step of a rolling upgrade, is a pod
	// template change that rides the same rolling pass (one restart per
	// member, one switchover): the members restart for both. nil on the
	// others, and when the template does not change.
	Template *TemplateChange `json:"template,omitempty"`
}

// ScaleInParams: shrink the StatefulSet to Replicas, removing Member.
type ScaleInParams struct {
	Member   string `json:"member"`
	Ordinal  int    `json:"ordinal"`
	Replicas int    `json:"replicas"`
}

// EtcdAddMemberParams: grow the StatefulSet to Replicas; the new pod
// Member joins the running cluster (never bootstraps a new one), as a
// learner when Learner is set.
type EtcdAddMemberParams struct {
	Member   string `json:"member"`
	Ordinal  int    `json:"ordinal"`
	Replicas int    `json:"replicas"`
	Learner  bool   `json:"learner"`
}

// EtcdRemoveMemberParams: remove Member from the etcd membership.
// TransferLeadership is set when Member led the cluster when planned; the
// runtime moves leadership away first whenever Member leads and etcd can
// (3.3+; older versions elect a new leader after the removal).
type EtcdRemoveMemberParams struct {
	Member             string `json:"member"`
	Ordinal            int    `json:"ordinal"`
	TransferLeadership bool   `json:"transferLeadership"`
}

// PostgresAddReplicaParams: grow the StatefulSet to Replicas; the new pod
// Member (ordinal Ordinal) clones from the primary, and so do the others
// in Members when the step adds several (a primary running alone gets
// all its replicas in one step: the StatefulSet starts them one after
// another). A volume kept from before (a scale-in, a major upgrade) is
// reused only if it holds this cluster's data on the running major;
// otherwise the instance manager replaces it with a fresh clone.
type PostgresAddReplicaParams struct {
	Member   string `json:"member"`
	Ordinal  int    `json:"ordinal"`
	Replicas int    `json:"replicas"`
	// Members names every member the step adds, Member first, when it
	// adds more than one.
	Members []string `json:"members,omitempty"`
	// Version, when set, clones the new replica at that minor version
	// ahead of a rolling upgrade: the template's version changes with the
	// update partition at Partition, the new member's ordinal.
	Version   string `json:"version,omitempty"`
	Partition int    `json:"partition,omitempty"`
}

// Added names the members the step adds, Member first.
func (a PostgresAddReplicaParams) Added() []string {
	if len(a.Members) > 0 {
		return a.Members
	}
	return []string{a.Member}
}

// PostgresSwitchoverParams: hand the primary role from From to To.
// Request is the spec.switchover request the step serves (its ID); empty
// for a switchover the planner plans on its own (an upgrade, a scale-in).
type PostgresSwitchoverParams struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
	// Request is the spec.switchover request's ID; empty for none.
	Request string `json:"request,omitempty"`
}

// PostgresMajorUpgradeParams: stop the replicas (the StatefulSet keeps one
// pod), run pg_upgrade on Primary's data from From to To, start it.
type PostgresMajorUpgradeParams struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Primary string `json:"primary"`
}

// PostgresUpgradeCheckParams: render the Job Job, which checks the
// upgrade from version From to version To with the new major's
// pg_upgrade --check on the newest base backup in StorageLocation (the
// backup policy's). The major upgrade's step removes the Job; with
// Remove set, the step removes it instead, for an upgrade no longer
// asked for (To is then its major only).
type PostgresUpgradeCheckParams struct {
	From            string `json:"from"`
	To              string `json:"to"`
	Job             string `json:"job"`
	StorageLocation string `json:"storageLocation,omitempty"`
	Remove          bool   `json:"remove,omitempty"`
}

// UpgradeCheckJob is the check Job the manifests hold, as rendered: the
// majors it checks, the backup location it reads, its scratch volume
// (its size; ScratchClaim: a claim of its own of ScratchClass, the
// cluster's default class when empty, where false is an emptyDir on the
// node's disk, as cairn rendered it before) and its images by container
// name (nil renders the renderer's). A Job's pod template cannot change,
// so what it was rendered with is kept, never rendered anew.
type UpgradeCheckJob struct {
	From            int               `json:"from"`
	To              int               `json:"to"`
	StorageLocation string            `json:"storageLocation"`
	Scratch         string            `json:"scratch"`
	ScratchClaim    bool              `json:"scratchClaim,omitempty"`
	ScratchClass    string            `json:"scratchClass,omitempty"`
	Images          map[string]string `json:"images,omitempty"`
}

// PostgresSynchronousStandbysParams: change the number of synchronous
// standbys.
type PostgresSynchronousStandbysParams struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// SealBootstrapParams: switch the rendered config from bootstrap to join
// mode. It has no parameters.
type SealBootstrapParams struct{}

// RestartMemberParams: restart Member by setting the StatefulSet's update
// partition to Partition. Template is set on the first step of a rolling
// restart, the one that changes the pod template (and the config).
type RestartMemberParams struct {
	Member    string          `json:"member"`
	Ordinal   int             `json:"ordinal"`
	Partition int             `json:"partition"`
	Replicas  int             `json:"replicas"`
	Template  *TemplateChange `json:"template,omitempty"`
}

// TemplateChange is what a rolling restart changes in the pod template.
type TemplateChange struct {
	// Revision is the template revision the members restart for.
	Revision string `json:"revision"`
	// Resources are the database container's requests and limits after
	// the change; nil when none are set.
	Resources *contract.Resources `json:"resources,omitempty"`
	// Parameters is the PostgreSQL parameter change the restart brings;
	// nil when the parameters stay.
	Parameters *ParameterChange `json:"parameters,omitempty"`
	// SpaceQuota is etcd's space quota in bytes after the change
	// (--quota-backend-bytes); empty when the restart leaves it.
	SpaceQuota string `json:"spaceQuota,omitempty"`
	// ReadOnlyRoot: the restart brings read-only root filesystems to a
	// template rendered before cairn set them; false when it leaves them.
	ReadOnlyRoot bool `json:"readOnlyRootFilesystem,omitempty"`
	// TLS is the etcd cluster's TLS mode after the restart
	// (contract.TLSModes): a cluster rendered before TLS moves to accept,
	// then to require, each by a rolling restart; empty when the restart
	// leaves the mode.
	TLS string `json:"tls,omitempty"`
	// Issuer is the cert-manager issuer of the certificates a restart
	// into TLS mode accept brings (spec.tls.issuerRef); nil for the
	// runtime's own CA, and on every other restart.
	Issuer *contract.IssuerRef `json:"issuer,omitempty"`
}

// Template is the pod template change a step brings: a rolling
// restart's, or one riding a rolling upgrade's first step; nil for none.
func (p Params) Template() *TemplateChange {
	switch {
	case p.RestartMember != nil:
		return p.RestartMember.Template
	case p.UpgradeMember != nil:
		return p.UpgradeMember.Template
	}
	return nil
}

// ParameterChange changes the spec's PostgreSQL parameters in the
// rendered postgresql.conf, values as written there (quoted).
type ParameterChange struct {
	From map[string]string `json:"from,omitempty"`
	To   map[string]string `json:"to,omitempty"`
	// Revision is the config revision of To.
	Revision string `json:"revision"`
	// Restart lists the changed parameters that take effect only when a
	// member restarts, sorted; empty for a reload-only change.
	Restart []string `json:"restart,omitempty"`
}

// PostgresConfigureTLSParams: move the cluster's TLS mode From one mode
// To the next (contract.TLSModes). Revision is the config revision the
// step renders, which every member must load.
type PostgresConfigureTLSParams struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Revision string `json:"revision"`
	// Issuer, when moving from off, is the cert-manager issuer of the
	// spec (nil: the runtime issues the certificates).
	Issuer *contract.IssuerRef `json:"issuer,omitempty"`
}

// RestrictNetworkParams: render the NetworkPolicy Policy, which admits
// to the members only the members, the runtime and pods of the
// cluster's namespace labelled ClientLabel: contract.ClientLabelValue.
type RestrictNetworkParams struct {
	Policy      string `json:"policy"`
	ClientLabel string `json:"clientLabel"`
}

// HardenRuntimeParams: render the runtime's Deployment with a read-only
// root filesystem and a memory request and limit; its container writes
// only to the Writable folders, each an emptyDir of its own.
type HardenRuntimeParams struct {
	Deployment string   `json:"deployment"`
	Writable   []string `json:"writable"`
	// MemoryRequest and MemoryLimit are the container's memory request
	// and limit (contract.RuntimeMemoryRequest, RuntimeMemoryLimit);
	// empty in a step planned before cairn set them.
	MemoryRequest string `json:"memoryRequest,omitempty"`
	MemoryLimit   string `json:"memoryLimit,omitempty"`
}

// EtcdRecoverParams: bring an etcd cluster that lost quorum back. Seed
// starts the new cluster: in mode contract.EtcdRecoverFromSnapshot it
// restores Backup (from StorageLocation, of Cluster) with Token as a new
// cluster; in mode contract.EtcdRecoverFromMember it keeps its own data
// and drops every other member. The other members move their data aside
// and rejoin one at a time.
type EtcdRecoverParams struct {
	Mode            string `json:"mode"`
	Seed            string `json:"seed"`
	Backup          string `json:"backup,omitempty"`
	StorageLocation string `json:"storageLocation,omitempty"`
	Cluster         string `json:"cluster,omitempty"`
	Token           string `json:"token,omitempty"`
	// Revision is the store revision the cluster comes back at;
	// QuorumRevision the highest the runtime recorded while it had quorum
	// (0 when unknown); SnapshotRevision the snapshot's.
	Revision         int64 `json:"revision"`
	QuorumRevision   int64 `json:"quorumRevision,omitempty"`
	SnapshotRevision int64 `json:"snapshotRevision,omitempty"`
	// Members is how many members the cluster has again once every one
	// has rejoined.
	Members int `json:"members"`
}

// CompactionSettings is an etcd compaction policy as the runtime runs it:
// Mode contract.EtcdCompactionPeriodic with Retention a duration, or
// contract.EtcdCompactionRevision with Retention a number of revisions.
type CompactionSettings struct {
	Mode      string `json:"mode"`
	Retention string `json:"retention"`
}

// EtcdConfigureCompactionParams: change the compaction policy. From is
// nil when the runtime did not compact.
type EtcdConfigureCompactionParams struct {
	From *CompactionSettings `json:"from,omitempty"`
	To   CompactionSettings  `json:"to"`
}

// EtcdDowngradeParams: Action (contract.EtcdDowngradeEnable or
// contract.EtcdDowngradeCancel) etcd's downgrade of the cluster version
// from minor From to minor To ("3.7" to "3.6").
type EtcdDowngradeParams struct {
	Action string `json:"action"`
	From   string `json:"from"`
	To     string `json:"to"`
}
