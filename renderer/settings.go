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
	// UpgradeCheck is a major upgrade's pre-flight check Job, rendered
	// from its step until the upgrade's step removes it; nil renders none.
	UpgradeCheck *plan.UpgradeCheckJob
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
		ReadOnlyRoot: b.ReadOnlyRoot, RuntimeReadOnlyRoot: b.RuntimeReadOnlyRoot, UpgradeCheck: b.UpgradeCheck,
	}
}

// createSettings are the Settings a create step brings up.
func createSettings(k Kind, c spec.Cluster, cp *plan.CreateClusterParams) Settings {
	s := Settings{
		Replicas: cp.Members, Version: cp.Version, Storage: cp.Storage, TemplateStorage: cp.Storage,
		Backup: backupOf(c.Common().Backup), Bootstrap: contract.BootstrapNew, Restore: cp.RestoreFrom,
		Resources: c.Common().Resources.Contract(), StorageClass: c.Common().StorageClass,
		// A new cluster admits only its members, runtime and clients,
		// and its containers, the runtime's too, write only to their
		// volumes.
		Network: contract.NetworkRestricted, ReadOnlyRoot: true, RuntimeReadOnlyRoot: true,
	}
	return k.Created(c, s)
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

// apply returns the Settings after step s.
func (cur Settings) apply(k Kind, c spec.Cluster, s plan.Step) (Settings, error) {
	next := cur
	next.Bootstrap = contract.BootstrapExisting
	p := s.Params
	switch s.Kind {
	case plan.CreateCluster:
		return createSettings(k, c, p.CreateCluster), nil
	case plan.ConfigureBackup:
		next.Backup = p.ConfigureBackup.To
	case plan.TakeBackup:
		next.Requests.BackupID = s.ID
	case plan.ExpandStorage:
		next.Storage = p.ExpandStorage.To
	case plan.UpgradeMember:
		next.Version, next.Partition, next.Images = p.UpgradeMember.To, p.UpgradeMember.Partition, nil
	case plan.ScaleIn:
		next.Replicas = p.ScaleIn.Replicas
	case plan.EtcdAddMember:
		next.Replicas = p.EtcdAddMember.Replicas
	case plan.EtcdRemoveMember:
		next.Requests.RemoveID, next.Requests.RemoveMember = s.ID, p.EtcdRemoveMember.Member
	case plan.PostgresAddReplica:
		a := p.PostgresAddReplica
		next.Replicas = a.Replicas
		if a.Version != "" {
			next.Version, next.Partition, next.Images = a.Version, a.Partition, nil
		}
	case plan.PostgresSwitchover:
		next.Requests.SwitchoverID, next.Requests.SwitchoverTo = s.ID, p.PostgresSwitchover.To
	case plan.PostgresMajorUpgrade:
		from, err := spec.ParseRelease(p.PostgresMajorUpgrade.From, 2)
		if err != nil {
			return cur, fmt.Errorf("step %s: %w", s.ID, err)
		}
		next.Version, next.Replicas, next.Partition, next.UpgradeFrom = p.PostgresMajorUpgrade.To, 1, 0, from.Major
		next.Images, next.UpgradeCheck = nil, nil
	case plan.PostgresUpgradeCheck:
		u := p.PostgresUpgradeCheck
		if u.Remove {
			next.UpgradeCheck = nil
			break
		}
		from, err := spec.ParseRelease(u.From, 2)
		if err != nil {
			return cur, fmt.Errorf("step %s: %w", s.ID, err)
		}
		to, err := spec.ParseRelease(u.To, 2)
		if err != nil {
			return cur, fmt.Errorf("step %s: %w", s.ID, err)
		}
		next.UpgradeCheck = &plan.UpgradeCheckJob{From: from.Major, To: to.Major, StorageLocation: u.StorageLocation, Scratch: cur.Storage}
	case plan.PostgresSynchronousStandbys:
		next.Sync = p.PostgresSynchronousStandbys.To
	case plan.RestartMember:
		rm := p.RestartMember
		next.Partition = rm.Partition
		if t := rm.Template; t != nil {
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
		}
	case plan.PostgresReloadParameters:
		next.Parameters, next.ConfigRevision = p.PostgresReloadParameters.To, p.PostgresReloadParameters.Revision
	case plan.PostgresConfigureTLS:
		t := p.PostgresConfigureTLS
		next.TLS, next.ConfigRevision = t.To, t.Revision
		if t.From == contract.TLSOff {
			next.TLSIssuer = t.Issuer
		}
	case plan.RestrictNetwork:
		next.Network = contract.NetworkRestricted
	case plan.HardenRuntime:
		next.RuntimeReadOnlyRoot = true
	case plan.EtcdConfigureCompaction:
		to := p.EtcdConfigureCompaction.To
		next.Compaction = &to
	case plan.EtcdRecover:
		next.Requests.RecoverID, next.Requests.Recover = s.ID, p.EtcdRecover
	case plan.EtcdDowngrade:
		next.Requests.DowngradeID, next.Requests.Downgrade = s.ID, p.EtcdDowngrade
	case plan.SealBootstrap:
		// bootstrap is "existing" after any step but a create
	default:
		return cur, fmt.Errorf("step %s: the renderer does not know step kind %q", s.ID, s.Kind)
	}
	return next, nil
}
