package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

const withBackup = "backup: {schedule: '0 2 * * *', storageLocation: 's3://bkp/pg'}"

// pgBacked gives c the backup policy withBackup renders, and the WAL
// archiving it brings (pgArchiving).
func pgBacked(c *live.Cluster) *live.Cluster {
	c.Backup = &live.Backup{Schedule: "0 2 * * *", TimeZone: "UTC", StorageLocation: "s3://bkp/pg"}
	return pgArchiving(c)
}

// pgArchiving is c with the archive settings a backup policy renders in
// its parameters, as the observer reads them back.
func pgArchiving(c *live.Cluster) *live.Cluster {
	if c.Parameters == nil {
		c.Parameters = map[string]string{}
	}
	for k, v := range contract.PostgresArchiveSettings {
		c.Parameters[k] = spec.ParamValue(v).Quoted()
	}
	return c
}

func TestPostgresPlans(t *testing.T) {
	runCases(t, []planCase{
		{name: "create from nothing", desired: pgSpec(t, 3, "14.5"), status: plan.StatusPlanned, steps: []string{"create", "seal-bootstrap"}},
		{name: "converged", desired: pgSpec(t, 3, "14.5"), observed: pgLive(3, "14.5", 0), status: plan.StatusConverged},
		{
			name: "a failover is not fought: the new primary stays", desired: pgSpec(t, 3, "14.5"), observed: pgLive(3, "14.5", 2),
			status: plan.StatusConverged,
		},
		{
			name: "scale out adds replicas one at a time", desired: pgSpec(t, 5, "14.5"), observed: pgLive(3, "14.5", 0),
			status: plan.StatusPlanned, steps: []string{"pg-add-3", "pg-add-4"},
			check: func(t *testing.T, p plan.Plan) {
				if !hasGate(p.Steps[0], plan.GateReplicaStreaming, plan.After) || p.Steps[0].Params.PostgresAddReplica.Replicas != 4 {
					t.Errorf("%+v", p.Steps[0])
				}
			},
		},
		{
			name: "scale in never removes the primary: switchover first", desired: pgSpec(t, 1, "14.5"), observed: pgLive(3, "14.5", 2),
			status: plan.StatusPlanned, steps: []string{"switchover-2-to-0-for-scale-in", "scale-in-2", "scale-in-1"},
			check: func(t *testing.T, p plan.Plan) {
				sw := p.Steps[0].Params.PostgresSwitchover
				if sw.From != "pg-2" || sw.To != "pg-0" || !p.Steps[0].Disruptive {
					t.Errorf("%+v", p.Steps[0])
				}
			},
		},
		{
			name: "minor upgrade: replicas first, switchover, old primary last", desired: pgSpec(t, 3, "14.9"), observed: pgLive(3, "14.5", 0),
			status: plan.StatusPlanned, steps: []string{"upgrade-2-to-14.9", "upgrade-1-to-14.9", "switchover-0-to-1-for-14.9", "upgrade-0-to-14.9"},
			check: func(t *testing.T, p plan.Plan) {
				for _, s := range p.Steps {
					if s.Kind == plan.UpgradeMember && (s.Disruptive || !s.Reversible) {
						t.Errorf("%s: replica restarts are neither disruptive nor irreversible", s.ID)
					}
				}
			},
		},
		{
			name: "minor upgrade with the primary in the middle: one switchover, to the upgraded member above it", desired: pgSpec(t, 3, "14.9"), observed: pgLive(3, "14.5", 1),
			status: plan.StatusPlanned, steps: []string{"upgrade-2-to-14.9", "switchover-1-to-2-for-14.9", "upgrade-1-to-14.9", "upgrade-0-to-14.9"},
		},
		{
			name: "minor upgrade with the primary at the top: it moves to ordinal 0 first, which the rollout reaches last", desired: pgSpec(t, 3, "14.9"), observed: pgLive(3, "14.5", 2),
			status: plan.StatusPlanned, steps: []string{"switchover-2-to-0-for-14.9", "upgrade-2-to-14.9", "upgrade-1-to-14.9", "switchover-0-to-1-for-14.9", "upgrade-0-to-14.9"},
		},
		{
			name: "minor upgrade of a single instance is disruptive", desired: pgSpec(t, 1, "14.9"), observed: pgLive(1, "14.5", 0),
			status: plan.StatusPlanned, steps: []string{"upgrade-0-to-14.9"},
			check: func(t *testing.T, p plan.Plan) {
				if !p.Steps[0].Disruptive || !hasGate(p.Steps[0], plan.GatePrimary, plan.After) {
					t.Errorf("%+v", p.Steps[0])
				}
			},
		},
		{
			name: "a single instance gets all its replicas in one step before a minor upgrade, cloned at the new version", desired: pgSpec(t, 3, "14.9"), observed: pgLive(1, "14.5", 0),
			status: plan.StatusPlanned, steps: []string{"pg-add-1-to-2", "switchover-0-to-1-for-14.9", "upgrade-0-to-14.9"},
			check: func(t *testing.T, p plan.Plan) {
				a := p.Steps[0].Params.PostgresAddReplica
				if a.Version != "14.9" || a.Partition != 1 || a.Replicas != 3 || !slices.Equal(a.Added(), []string{"pg-1", "pg-2"}) || !strings.Contains(p.Steps[0].Summary, "at 14.9") {
					t.Errorf("%+v %q", a, p.Steps[0].Summary)
				}
				for _, m := range a.Added() {
					if !hasMemberGate(p.Steps[0], plan.GateReplicaStreaming, m) {
						t.Errorf("no streaming gate for %s: %+v", m, p.Steps[0].Gates)
					}
				}
			},
		},
		{
			name: "major upgrade: fresh backup, offline pg_upgrade, replicas re-cloned", desired: pgSpec(t, 3, "15.4", withBackup), observed: pgBacked(pgLive(3, "14.5", 0)),
			status: plan.StatusPlanned, steps: []string{"backup-before-15.4", "pg-upgrade-check-15.4", "pg-major-upgrade-15.4", "pg-add-1-to-2"},
			check: func(t *testing.T, p plan.Plan) {
				m := p.Steps[2]
				if m.Reversible || !m.Disruptive || !hasGate(m, plan.GateBackupFresh, plan.Before) {
					t.Errorf("major step: %+v", m)
				}
				// Done once the runtime reports the request served: a
				// freshness gate would turn false again as the backup ages.
				if b := p.Steps[0]; b.Kind != plan.TakeBackup || hasGate(b, plan.GateBackupFresh, plan.After) {
					t.Errorf("backup step: %+v", b)
				}
				if !strings.Contains(m.Rollback, "backup-before-15.4") {
					t.Errorf("rollback: %q", m.Rollback)
				}
			},
		},
		{
			name: "major upgrade with the primary elsewhere switches to ordinal 0 first", desired: pgSpec(t, 2, "16.2", withBackup), observed: pgBacked(pgLive(3, "14.5", 2)),
			status: plan.StatusPlanned, steps: []string{"backup-before-16.2", "pg-upgrade-check-16.2", "switchover-2-to-0-for-16.2", "pg-major-upgrade-16.2", "pg-add-1"},
		},
		{
			name: "major upgrade with synchronous standbys turns them off while re-cloning", desired: pgSpec(t, 3, "15.4", withBackup, "synchronousStandbys: 1"),
			observed: with(pgBacked(pgLive(3, "14.5", 0)), func(c *live.Cluster) { c.SynchronousStandbys = 1 }),
			status:   plan.StatusPlanned, steps: []string{"backup-before-15.4", "pg-upgrade-check-15.4", "sync-standbys-0", "pg-major-upgrade-15.4", "pg-add-1-to-2", "sync-standbys-1"},
		},
		{name: "major upgrade without backups is refused", desired: pgSpec(t, 3, "15.4"), observed: pgLive(3, "14.5", 0), status: plan.StatusRefused, refusals: []string{RulePostgresMajorNeedsBackup}},
		{name: "major downgrade is refused", desired: pgSpec(t, 3, "13.9", withBackup), observed: pgBacked(pgLive(3, "14.5", 0)), status: plan.StatusRefused, refusals: []string{RulePostgresMajorDowngrade}},
		{name: "minor downgrade is allowed", desired: pgSpec(t, 1, "14.4"), observed: pgLive(1, "14.5", 0), status: plan.StatusPlanned, steps: []string{"upgrade-0-to-14.4"}},
		{name: "storage shrink is refused", desired: pgSpec(t, 3, "14.5", "storage: 5Gi"), observed: pgLive(3, "14.5", 0), status: plan.StatusRefused, refusals: []string{RuleStorageShrink}},
		{name: "storage grows", desired: pgSpec(t, 3, "14.5", "storage: 20Gi"), observed: pgLive(3, "14.5", 0), status: plan.StatusPlanned, steps: []string{"expand-storage-20gi"}},
		{name: "instances 17 are refused", desired: pgSpec(t, 17, "14.5"), observed: pgLive(3, "14.5", 0), status: plan.StatusRefused, refusals: []string{RulePostgresInstancesRange}},
		{name: "instances 0 are refused", desired: pgSpec(t, 0, "14.5"), status: plan.StatusRefused, refusals: []string{RulePostgresInstancesRange}},
		{
			name: "no primary: the runtime's failover is waited for", desired: pgSpec(t, 5, "14.5"),
			observed: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.Members[0].Role = live.RoleReplica }),
			status:   plan.StatusWaiting, waiting: "fails over",
		},
		{
			name: "two primaries: the runtime's fencing is waited for", desired: pgSpec(t, 3, "14.5"),
			observed: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.Members[1].Role = live.RolePrimary }),
			status:   plan.StatusWaiting, waiting: "fences all but one",
		},
		{
			name: "a replica not ready is waited for", desired: pgSpec(t, 3, "14.9"),
			observed: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.Members[2].Ready = false }),
			status:   plan.StatusWaiting, waiting: "pg-2 is ready",
		},
		{
			name: "a half-done minor upgrade is finished: switchover, then the old primary", desired: pgSpec(t, 3, "14.9"),
			observed: with(pgLive(3, "14.9", 0), func(c *live.Cluster) {
				c.StatefulSet.UpdatePartition = 1
				c.Members[0].Version = "14.5"
			}),
			status: plan.StatusPlanned, steps: []string{"switchover-0-to-1-for-14.9", "upgrade-0-to-14.9"},
		},
		{
			name: "a half-done minor upgrade with the primary below the partition hands over to an upgraded replica once", desired: pgSpec(t, 3, "14.9"),
			observed: with(pgLive(3, "14.9", 1), func(c *live.Cluster) {
				c.StatefulSet.UpdatePartition = 2
				c.Members[0].Version, c.Members[1].Version = "14.5", "14.5"
			}),
			status: plan.StatusPlanned, steps: []string{"switchover-1-to-2-for-14.9", "upgrade-1-to-14.9", "upgrade-0-to-14.9"},
			check: func(t *testing.T, p plan.Plan) {
				if u := p.Steps[1].Params.UpgradeMember; u.From != "14.5" || u.To != "14.9" {
					t.Errorf("finishing step moves %s -> %s, want 14.5 -> 14.9", u.From, u.To)
				}
			},
		},
		{
			name: "a StatefulSet scaled to zero by hand is waited for", desired: pgSpec(t, 3, "14.5"),
			observed: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.StatefulSet.Replicas, c.Members = 0, nil }),
			status:   plan.StatusWaiting, waiting: "runs no pods",
		},
		{
			name: "after a failover to an upgraded replica mid-upgrade, only replicas remain", desired: pgSpec(t, 3, "14.9"),
			observed: with(pgLive(3, "14.9", 2), func(c *live.Cluster) {
				c.StatefulSet.UpdatePartition = 2
				c.Members[0].Version, c.Members[1].Version = "14.5", "14.5"
			}),
			status: plan.StatusPlanned, steps: []string{"upgrade-1-to-14.9", "upgrade-0-to-14.9"},
		},
		{
			name: "synchronous standbys go up at the end and down before a scale-in", desired: pgSpec(t, 2, "14.5", "synchronousStandbys: 1"),
			observed: with(pgLive(4, "14.5", 0), func(c *live.Cluster) { c.SynchronousStandbys = 2 }),
			status:   plan.StatusPlanned, steps: []string{"sync-standbys-1", "scale-in-3", "scale-in-2"},
		},
		{
			name: "restarting the only synchronous standby is disruptive", desired: pgSpec(t, 2, "14.9", "synchronousStandbys: 1"),
			observed: with(pgLive(2, "14.5", 0), func(c *live.Cluster) { c.SynchronousStandbys = 1 }),
			status:   plan.StatusPlanned, steps: []string{"upgrade-1-to-14.9", "switchover-0-to-1-for-14.9", "upgrade-0-to-14.9"},
			check: func(t *testing.T, p plan.Plan) {
				if !p.Steps[0].Disruptive {
					t.Error("commits wait while the only synchronous standby restarts")
				}
			},
		},
		{
			// WAL archiving goes with the policy: archive_mode needs a
			// restart, one member at a time.
			name: "backups turned off", desired: pgSpec(t, 3, "14.5"), observed: pgBacked(pgLive(3, "14.5", 0)),
			status: plan.StatusPlanned, steps: []string{"configure-backup", "restart-2-dbc5aeaa3aa5", "restart-1-dbc5aeaa3aa5", "switchover-0-to-1-for-restart-dbc5aeaa3aa5", "restart-0-dbc5aeaa3aa5"},
			check: func(t *testing.T, p plan.Plan) {
				if b := p.Steps[0].Params.ConfigureBackup; b.To != nil || b.From == nil {
					t.Errorf("%+v", b)
				}
				pc := p.Steps[1].Params.RestartMember.Template.Parameters
				if pc == nil || !slices.Equal(pc.Restart, []string{"archive_mode"}) || pc.To["archive_mode"] != "" {
					t.Errorf("the restart does not turn archiving off: %+v", pc)
				}
			},
		},
		{
			// A cluster rendered with a backup policy before cairn archived
			// WAL: a rolling restart brings the archive settings.
			name: "a backed-up cluster starts archiving WAL", desired: pgSpec(t, 3, "14.5", withBackup),
			observed: with(pgBacked(pgLive(3, "14.5", 0)), func(c *live.Cluster) { c.Parameters = nil }),
			status:   plan.StatusPlanned, steps: []string{"restart-2-a2638c68425a", "restart-1-a2638c68425a", "switchover-0-to-1-for-restart-a2638c68425a", "restart-0-a2638c68425a"},
			check: func(t *testing.T, p plan.Plan) {
				pc := p.Steps[0].Params.RestartMember.Template.Parameters
				if pc == nil || pc.To["archive_mode"] != "'on'" || !strings.Contains(pc.To["archive_command"], contract.PostgresWALCommand+" push %f %p") || !slices.Equal(pc.Restart, []string{"archive_mode"}) {
					t.Errorf("the restart does not bring archiving: %+v", pc)
				}
				if !strings.Contains(p.Steps[0].Summary, "archive_mode") {
					t.Errorf("summary %q does not say archiving starts", p.Steps[0].Summary)
				}
			},
		},
		{
			name: "members on two majors need a person", desired: pgSpec(t, 3, "15.4", withBackup),
			observed: with(pgBacked(pgLive(3, "15.4", 0)), func(c *live.Cluster) { c.StatefulSet.UpdatePartition, c.Members[1].Version = 2, "14.5" }),
			status:   plan.StatusRefused, refusals: []string{RuleUnknownVersion},
		},
		{
			name: "a major upgrade in flight is waited for", desired: pgSpec(t, 3, "15.4", withBackup),
			observed: with(pgBacked(pgLive(1, "15.4", 0)), func(c *live.Cluster) { c.Members[0].Version, c.Members[0].Ready = "14.5", false }),
			status:   plan.StatusWaiting, waiting: "pg-0 restarts at 15.4",
		},
	})
}
