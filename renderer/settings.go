package renderer

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Settings are the values steps change in the rendered manifests. Each
// step moves the cluster from one Settings value to the next.
type Settings struct {
	Replicas  int
	Partition int
	Version   string
	// storage is the members' volume size; templateStorage the size in the
	// StatefulSet's volumeClaimTemplates (immutable after creation).
	Storage         string
	TemplateStorage string
	Backup          *plan.BackupSettings
	Sync            int
	// bootstrap is "new" while a create step brings the cluster up and
	// "existing" afterwards: a member with an empty data directory then
	// joins the running cluster instead of bootstrapping a second one.
	Bootstrap string
	// upgradeFrom is the PostgreSQL major the template's pg_upgrade init
	// container upgrades from; 0 when there is none.
	UpgradeFrom int
	Requests    Requests
	// restore is the backup the create step starts the cluster from.
	Restore *plan.RestoreSource
	// Resources are the database container's; StorageClass the volumes';
	// TemplateRevision the pod template's revision annotation ("" for
	// none).
	Resources        *contract.Resources
	StorageClass     string
	TemplateRevision string
	// Images are the pod template's images as they run, by container
	// name; nil renders those the Options name. A step that changes the
	// template on purpose (a version, a rolling restart) renders the
	// Options' images from then on, so a new image reaches the members
	// only with such a step, never in the base.
	Images map[string]string
	// Parameters are PostgreSQL's spec parameters as rendered, and
	// ConfigRevision their revision ("" renders none).
	Parameters     map[string]string
	ConfigRevision string
	// Compaction is the etcd compaction policy the runtime runs (nil
	// renders none: it does not compact); SpaceQuota etcd's space quota in
	// bytes ("" renders none: etcd's default).
	Compaction *plan.CompactionSettings
	SpaceQuota string
	// TLS is the cluster's TLS mode (contract.TLSModes; "" is off): what
	// the servers serve, what pg_hba admits, and the certificate Secrets
	// the members and the runtime may read.
	TLS string
	// TLSIssuer is the cert-manager issuer of the certificates, rendered
	// as Certificates while TLS is on; nil while the runtime issues them.
	// A step that turns TLS on sets it from the spec (PostgreSQL's
	// tls-accept: PostgresConfigureTLSParams.Issuer).
	TLSIssuer *contract.IssuerRef
	// Network is contract.NetworkRestricted when the cluster's
	// NetworkPolicy is rendered ("" renders none, as before it).
	Network string
	// ReadOnlyRoot renders the database pods' containers with read-only
	// root filesystems and their writable folders as volumes; false
	// renders the template as cairn did before (writable roots).
	ReadOnlyRoot bool
	// RuntimeReadOnlyRoot renders the runtime's container with a read-only
	// root filesystem and its /tmp as a volume; false renders the
	// Deployment as cairn did before.
	RuntimeReadOnlyRoot bool
	// RuntimeNoMemoryLimit renders the runtime's container without a
	// memory request and limit, as cairn did before it set them; false
	// (new clusters, and after the HardenRuntime step) renders
	// contract.RuntimeMemoryRequest and RuntimeMemoryLimit.
	RuntimeNoMemoryLimit bool
	// UpgradeCheck is a major upgrade's pre-flight check Job, rendered
	// from its step until the upgrade's step removes it; nil renders none.
	UpgradeCheck *plan.UpgradeCheckJob
	// SwitchoverServed is the last spec.switchover request a step served
	// (contract.KeySwitchoverServed); "" renders none.
	SwitchoverServed string
}

// requests are the runtime's instructions from merged steps. Each is keyed
// by its step's ID: the runtime acts on an ID once and records it as done,
// so a request left in place by later steps is not acted on again.
type Requests struct {
	SwitchoverID string
	SwitchoverTo string
	RemoveID     string
	RemoveMember string
	BackupID     string
	// Recover is a merged EtcdRecover step's recovery, with the step's ID.
	RecoverID string
	Recover   *plan.EtcdRecoverParams
	// Downgrade is a merged EtcdDowngrade step's request, with its ID.
	DowngradeID string
	Downgrade   *plan.EtcdDowngradeParams
}

// baseSettings are the Settings of the running cluster, or nil when the
// plan creates it.
func baseSettings(c spec.Cluster, p plan.Plan) *Settings {
	b := p.Baseline
	if b == nil {
		return nil
	}
	return &Settings{
		Replicas: b.Replicas, Partition: b.UpdatePartition, Version: b.Version,
		Storage: b.Storage, TemplateStorage: b.TemplateStorage, Backup: b.Backup,
		Sync: b.SynchronousStandbys, Bootstrap: contract.BootstrapExisting, UpgradeFrom: b.UpgradeFrom,
		Resources: b.Resources, StorageClass: b.StorageClass, TemplateRevision: b.TemplateRevision, Images: b.Images,
		Parameters: b.Parameters, ConfigRevision: b.ConfigRevision,
		Compaction: b.Compaction, SpaceQuota: b.SpaceQuota, TLS: b.TLS, TLSIssuer: b.TLSIssuer, Network: b.Network,
		ReadOnlyRoot: b.ReadOnlyRoot, RuntimeReadOnlyRoot: b.RuntimeReadOnlyRoot, RuntimeNoMemoryLimit: b.RuntimeNoMemoryLimit, UpgradeCheck: b.UpgradeCheck,
		SwitchoverServed: b.SwitchoverServed,
	}
}

// createSettings are the Settings create step s brings up: what its
// parameters say, adjusted by the kind (Kind.ApplyStep).
func createSettings(k Kind, c spec.Cluster, s plan.Step) (Settings, error) {
	cp := s.Params.CreateCluster
	base := Settings{
		Replicas: cp.Members, Version: cp.Version, Storage: cp.Storage, TemplateStorage: cp.Storage,
		Backup: backupOf(c.Common().Backup), Bootstrap: contract.BootstrapNew, Restore: cp.RestoreFrom,
		Resources: c.Common().Resources.Contract(), StorageClass: c.Common().StorageClass, TemplateRevision: cp.TemplateRevision,
		// A new cluster admits only its members, runtime and clients,
		// and its containers, the runtime's too, write only to their
		// volumes.
		Network: contract.NetworkRestricted, ReadOnlyRoot: true, RuntimeReadOnlyRoot: true,
	}
	return k.ApplyStep(base, c, s)
}

func backupOf(b *spec.Backup) *plan.BackupSettings {
	if b == nil {
		return nil
	}
	s := &plan.BackupSettings{Schedule: string(b.Schedule), TimeZone: b.TimeZone, StorageLocation: string(b.StorageLocation)}
	if b.Retention != nil {
		s.RetentionCount, s.RetentionMaxAge = b.Retention.Count, string(b.Retention.MaxAge)
	}
	return s
}

// apply returns the Settings after step s: the steps every kind shares
// here, the create step's parameters here and the rest of it by the kind,
// and each kind's own steps by the kind (Kind.ApplyStep).
func (cur Settings) apply(k Kind, c spec.Cluster, s plan.Step) (Settings, error) {
	if s.Kind == plan.CreateCluster {
		return createSettings(k, c, s)
	}
	next := cur
	next.Bootstrap = contract.BootstrapExisting
	p := s.Params
	switch s.Kind {
	case plan.ConfigureBackup:
		next.Backup = p.ConfigureBackup.To
	case plan.TakeBackup:
		next.Requests.BackupID = s.ID
	case plan.ExpandStorage:
		next.Storage = p.ExpandStorage.To
	case plan.UpgradeMember:
		if t := p.UpgradeMember.Template; t != nil {
			next = next.restarted(&plan.RestartMemberParams{Partition: p.UpgradeMember.Partition, Template: t})
		}
		next.Version, next.Partition, next.Images = p.UpgradeMember.To, p.UpgradeMember.Partition, nil
	case plan.ScaleIn:
		next.Replicas = p.ScaleIn.Replicas
	case plan.RestartMember:
		next = next.restarted(p.RestartMember)
	case plan.RestrictNetwork:
		next.Network = contract.NetworkRestricted
	case plan.HardenRuntime:
		next.RuntimeReadOnlyRoot, next.RuntimeNoMemoryLimit = true, false
	case plan.SealBootstrap:
		// bootstrap is "existing" after any step but a create
	default:
		return k.ApplyStep(next, c, s)
	}
	return next, nil
}

// restarted are the Settings after a RestartMember step: its partition,
// and the template it changes, if any.
func (cur Settings) restarted(rm *plan.RestartMemberParams) Settings {
	next := cur
	next.Partition = rm.Partition
	t := rm.Template
	if t == nil {
		return next
	}
	next.TemplateRevision, next.Resources, next.Images = t.Revision, t.Resources, nil
	if t.Parameters != nil {
		next.Parameters, next.ConfigRevision = t.Parameters.To, t.Parameters.Revision
	}
	if t.SpaceQuota != "" {
		next.SpaceQuota = t.SpaceQuota
	}
	if t.ReadOnlyRoot {
		next.ReadOnlyRoot = true
	}
	if t.TLS != "" {
		next.TLS = t.TLS
	}
	if t.TLS == contract.TLSAccept {
		// The issuer comes with the move to TLS (planner/etcdtls.go).
		next.TLSIssuer = t.Issuer
	}
	return next
}

// unknownStep is the error of a kind's renderer given a step kind it
// does not render.
func unknownStep(kind string, s plan.Step) error {
	return fmt.Errorf("step %s: the renderer of %s does not know step kind %q", s.ID, kind, s.Kind)
}
