package renderer

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// settings are the values steps change in the rendered manifests. Each
// step moves the cluster from one settings value to the next.
type settings struct {
	replicas  int
	partition int
	version   string
	// storage is the members' volume size; templateStorage the size in the
	// StatefulSet's volumeClaimTemplates (immutable after creation).
	storage         string
	templateStorage string
	backup          *plan.BackupSettings
	sync            int
	// bootstrap is "new" while a create step brings the cluster up and
	// "existing" afterwards: a member with an empty data directory then
	// joins the running cluster instead of bootstrapping a second one.
	bootstrap string
	// upgradeFrom is the PostgreSQL major the template's pg_upgrade init
	// container upgrades from; 0 when there is none.
	upgradeFrom int
	requests    requests
	// restore is the backup the create step starts the cluster from.
	restore *plan.RestoreSource
}

// requests are the runtime's instructions from merged steps. Each is keyed
// by its step's ID: the runtime acts on an ID once and records it as done,
// so a request left in place by later steps is not acted on again.
type requests struct {
	SwitchoverID string
	SwitchoverTo string
	RemoveID     string
	RemoveMember string
	BackupID     string
}

// baseSettings are the settings of the running cluster, or nil when the
// plan creates it.
func baseSettings(c spec.Cluster, p plan.Plan) *settings {
	b := p.Baseline
	if b == nil {
		return nil
	}
	return &settings{
		replicas: b.Replicas, partition: b.UpdatePartition, version: b.Version,
		storage: b.Storage, templateStorage: b.TemplateStorage, backup: b.Backup,
		sync: b.SynchronousStandbys, bootstrap: "existing", upgradeFrom: b.UpgradeFrom,
	}
}

// createSettings are the settings a create step brings up.
func createSettings(c spec.Cluster, cp *plan.CreateClusterParams) settings {
	s := settings{
		replicas: cp.Members, version: cp.Version, storage: cp.Storage, templateStorage: cp.Storage,
		backup: backupOf(c.Common().Backup), bootstrap: "new", restore: cp.RestoreFrom,
	}
	if pg, ok := c.(*spec.PostgresCluster); ok {
		s.sync = pg.Spec.SynchronousStandbys
	}
	return s
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

// apply returns the settings after step s.
func (cur settings) apply(c spec.Cluster, s plan.Step) (settings, error) {
	next := cur
	next.bootstrap = "existing"
	p := s.Params
	switch s.Kind {
	case plan.CreateCluster:
		return createSettings(c, p.CreateCluster), nil
	case plan.ConfigureBackup:
		next.backup = p.ConfigureBackup.To
	case plan.TakeBackup:
		next.requests.BackupID = s.ID
	case plan.ExpandStorage:
		next.storage = p.ExpandStorage.To
	case plan.UpgradeMember:
		next.version, next.partition = p.UpgradeMember.To, p.UpgradeMember.Partition
	case plan.ScaleIn:
		next.replicas = p.ScaleIn.Replicas
	case plan.EtcdAddMember:
		next.replicas = p.EtcdAddMember.Replicas
	case plan.EtcdRemoveMember:
		next.requests.RemoveID, next.requests.RemoveMember = s.ID, p.EtcdRemoveMember.Member
	case plan.PostgresAddReplica:
		next.replicas = p.PostgresAddReplica.Replicas
	case plan.PostgresSwitchover:
		next.requests.SwitchoverID, next.requests.SwitchoverTo = s.ID, p.PostgresSwitchover.To
	case plan.PostgresMajorUpgrade:
		from, err := spec.ParseRelease(p.PostgresMajorUpgrade.From, 2)
		if err != nil {
			return cur, fmt.Errorf("step %s: %w", s.ID, err)
		}
		next.version, next.replicas, next.partition, next.upgradeFrom = p.PostgresMajorUpgrade.To, 1, 0, from.Major
	case plan.PostgresSynchronousStandbys:
		next.sync = p.PostgresSynchronousStandbys.To
	case plan.SealBootstrap:
		// bootstrap is "existing" after any step but a create
	default:
		return cur, fmt.Errorf("step %s: the renderer does not know step kind %q", s.ID, s.Kind)
	}
	return next, nil
}
