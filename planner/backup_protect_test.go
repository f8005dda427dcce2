package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

const withEtcdBackup = "backup: {schedule: '0 3 * * *', storageLocation: 's3://bkp/e'}"

// etcdBacked gives an etcd cluster the backup policy withEtcdBackup sets
// and, when served is not empty, the TakeBackup request the runtime
// served last, with a backup still fresh.
func etcdBacked(c *live.Cluster, served string) *live.Cluster {
	c.Backup = &live.Backup{Schedule: "0 3 * * *", TimeZone: "UTC", StorageLocation: "s3://bkp/e", LastRequest: served}
	if served != "" {
		c.Backup.LastSuccessful = "2026-11-30T03:00:00Z"
	}
	return c
}

// pgBackedAt is pgBacked with the retention the spec's retention sets and
// the request the runtime served last.
func pgBackedAt(c *live.Cluster, count int, maxAge, served string, stale bool) *live.Cluster {
	c = pgBacked(c)
	c.Backup.RetentionCount, c.Backup.RetentionMaxAge = count, maxAge
	c.Backup.LastRequest, c.Backup.Stale = served, stale
	if served != "" {
		c.Backup.LastSuccessful = "2026-11-30T22:05:00Z"
	}
	return c
}

const window = "maintenanceWindow: {schedule: '0 22 * * *', duration: 2h}"

func retention(r string) string {
	return "backup: {schedule: '0 2 * * *', storageLocation: 's3://bkp/pg', retention: " + r + "}"
}

// A retention that deletes what the old one kept says so, and cannot be
// undone; one that keeps more is an ordinary, reversible change.
func TestRetentionChangeStep(t *testing.T) {
	for _, c := range []struct {
		name       string
		spec       string
		count      int
		maxAge     string
		shortens   string // what the summary says; "" when it does not shorten
		reversible bool
	}{
		{"retention added where there was none", retention("{count: 7, maxAge: 30d}"), 0, "", "retention shortens from keep all to 7 backups / 30d: older backups are deleted once the next backup completes", false},
		{"count lowered", retention("{count: 3}"), 7, "", "retention shortens from 7 backups to 3 backups", false},
		{"max age lowered", retention("{count: 7, maxAge: 7d}"), 7, "30d", "retention shortens from 7 backups / 30d to 7 backups / 7d", false},
		{"max age added beside a count", retention("{count: 7, maxAge: 720h}"), 7, "", "retention shortens from 7 backups to 7 backups / 720h", false},
		{"count raised", retention("{count: 14}"), 7, "", "", true},
		{"max age raised, count dropped", retention("{maxAge: 60d}"), 0, "30d", "", true},
		{"the same age written otherwise is no shortening", retention("{maxAge: 720h}"), 0, "30d", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := kinds.PlanCluster(pgSpec(t, 3, "14.5", c.spec), pgBackedAt(pgLive(3, "14.5", 0), c.count, c.maxAge, "", false), nil)
			s := step(t, p, "configure-backup")
			if s.Reversible != c.reversible || strings.Contains(s.Summary, "shortens") != (c.shortens != "") || !strings.Contains(s.Summary, c.shortens) {
				t.Fatalf("reversible=%v summary %q, want reversible=%v saying %q", s.Reversible, s.Summary, c.reversible, c.shortens)
			}
			if !c.reversible && !strings.Contains(s.Rollback, "do not come back") {
				t.Errorf("rollback %q", s.Rollback)
			}
		})
	}
}

// While a planned step's rollback restores a backup, a shorter retention
// is refused; once nothing relies on it (the pin keeps the backup), or
// when the retention grows, the change goes ahead.
func TestShorterRetentionRefusedWhileABackupIsReliedOn(t *testing.T) {
	shorter, longer := retention("{count: 3}"), retention("{count: 14}")
	runCases(t, []planCase{
		{
			name: "a major upgrade to plan", desired: pgSpec(t, 3, "15.4", shorter), observed: pgBackedAt(pgLive(3, "14.5", 0), 7, "", "", false),
			status: plan.StatusRefused, refusals: []string{RuleBackupRetentionPinned},
			check: wantRefusal("from 7 backups to 3 backups", "the major upgrade to 15.4", "step backup-before-15.4"),
		},
		{
			name: "a major upgrade whose backup is taken", desired: pgSpec(t, 3, "15.4", shorter), observed: pgBackedAt(pgLive(3, "14.5", 0), 7, "", "backup-before-15.4", false),
			status: plan.StatusRefused, refusals: []string{RuleBackupRetentionPinned},
		},
		{
			name: "retention added where there was none", desired: pgSpec(t, 3, "15.4", retention("{maxAge: 30d}")), observed: pgBackedAt(pgLive(3, "14.5", 0), 0, "", "", false),
			status: plan.StatusRefused, refusals: []string{RuleBackupRetentionPinned},
		},
		{
			name: "a longer retention beside a major upgrade", desired: pgSpec(t, 3, "15.4", longer), observed: pgBackedAt(pgLive(3, "14.5", 0), 7, "", "", false),
			status: plan.StatusPlanned, steps: []string{"configure-backup", "backup-before-15.4", "pg-upgrade-check-15.4", "pg-major-upgrade-15.4", "pg-add-1-to-2"},
		},
		{
			name: "no upgrade: the shorter retention goes ahead, irreversible", desired: pgSpec(t, 3, "14.5", shorter), observed: pgBackedAt(pgLive(3, "14.5", 0), 7, "", "", false),
			status: plan.StatusPlanned, steps: []string{"configure-backup"},
		},
		{
			name: "the upgrade done: the pinned backup is kept by the runtime", desired: pgSpec(t, 3, "15.4", shorter), observed: pgBackedAt(pgLive(3, "15.4", 0), 7, "", "backup-before-15.4", false),
			status: plan.StatusPlanned, steps: []string{"configure-backup"},
		},
		{
			name: "an etcd minor upgrade", desired: etcdSpec(t, 3, "3.5.21", "backup: {schedule: '0 3 * * *', storageLocation: 's3://bkp/e', retention: {count: 1}}"),
			observed: etcdBacked(etcdLive(3, "3.4.37", 0), ""),
			status:   plan.StatusRefused, refusals: []string{RuleBackupRetentionPinned},
		},
		{
			name: "an etcd patch upgrade relies on no backup", desired: etcdSpec(t, 3, "3.5.21", "backup: {schedule: '0 3 * * *', storageLocation: 's3://bkp/e', retention: {count: 1}}"),
			observed: etcdBacked(etcdLive(3, "3.5.20", 0), ""),
			status:   plan.StatusPlanned, steps: []string{"configure-backup", "upgrade-2-to-3.5.21", "upgrade-1-to-3.5.21", "upgrade-0-to-3.5.21"},
		},
	})
}

// The backup goes first, in the window; the switchover and the lowered
// synchronous standbys come only after it, right before the offline
// upgrade.
func TestMajorUpgradeOrder(t *testing.T) {
	sync1 := func(c *live.Cluster) { c.SynchronousStandbys = 1 }
	runCases(t, []planCase{
		{
			name: "backup, switchover, sync 0, upgrade", desired: pgSpec(t, 3, "15.4", withBackup, "synchronousStandbys: 1", window),
			observed: with(pgBacked(pgLive(3, "14.5", 2)), sync1),
			status:   plan.StatusPlanned, steps: []string{"backup-before-15.4", "pg-upgrade-check-15.4", "switchover-2-to-0-for-15.4", "sync-standbys-0", "pg-major-upgrade-15.4", "pg-add-1-to-2", "sync-standbys-1"},
			check: func(t *testing.T, p plan.Plan) {
				// The check touches no member: it waits for no window.
				for i, held := range []bool{true, false, true, false, true} {
					if s := p.Steps[i]; heldForWindow(s) != held {
						t.Errorf("%s: window gate %v, want %v", s.ID, !held, held)
					}
				}
				if b := p.Steps[0]; b.Kind != plan.TakeBackup || !strings.Contains(b.Summary, "in the maintenance window") || !strings.Contains(b.Summary, "pins") {
					t.Errorf("backup step %+v", b)
				}
			},
		},
		{
			name: "the primary on ordinal 0: backup, sync 0, upgrade", desired: pgSpec(t, 3, "15.4", withBackup, "synchronousStandbys: 1"),
			observed: with(pgBacked(pgLive(3, "14.5", 0)), sync1),
			status:   plan.StatusPlanned, steps: []string{"backup-before-15.4", "pg-upgrade-check-15.4", "sync-standbys-0", "pg-major-upgrade-15.4", "pg-add-1-to-2", "sync-standbys-1"},
			check: func(t *testing.T, p plan.Plan) {
				if heldForWindow(p.Steps[0]) {
					t.Error("no window in the spec, no window gate")
				}
			},
		},
		{
			name: "the backup taken: the check goes next", desired: pgSpec(t, 3, "15.4", withBackup, "synchronousStandbys: 1"),
			observed: with(pgBackedAt(pgLive(3, "14.5", 0), 0, "", "backup-before-15.4", false), sync1),
			status:   plan.StatusPlanned, steps: []string{"pg-upgrade-check-15.4", "sync-standbys-0", "pg-major-upgrade-15.4", "pg-add-1-to-2", "sync-standbys-1"},
		},
	})
}

// A pre-upgrade backup that aged past the upgrade's freshness gate (the
// upgrade waited for review beyond its window) is asked for again under
// the next request ID, held for the window: the plan never waits on a
// gate that nothing would satisfy.
func TestStalePreUpgradeBackupIsAskedAgain(t *testing.T) {
	for _, c := range []struct {
		name   string
		served string
		stale  bool
		take   string // the TakeBackup step planned first; "" for none
		relied string // the backup the upgrade's rollback names
	}{
		{"never asked", "", false, "backup-before-15.4", "backup-before-15.4"},
		{"never asked, the scheduled backup stale", "", true, "backup-before-15.4", "backup-before-15.4"},
		{"served and fresh: the upgrade goes next", "backup-before-15.4", false, "", "backup-before-15.4"},
		{"served, then stale: asked again", "backup-before-15.4", true, "backup-before-15.4-2", "backup-before-15.4-2"},
		{"asked again, served and fresh", "backup-before-15.4-2", false, "", "backup-before-15.4-2"},
		{"asked again, stale again", "backup-before-15.4-2", true, "backup-before-15.4-3", "backup-before-15.4-3"},
		{"another upgrade's request counts for nothing", "backup-before-14.9", false, "backup-before-15.4", "backup-before-15.4"},
		{"nor does a look-alike", "backup-before-15.4-02", false, "backup-before-15.4", "backup-before-15.4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := kinds.PlanCluster(pgSpec(t, 3, "15.4", withBackup, window), pgBackedAt(pgLive(3, "14.5", 0), 0, "", c.served, c.stale), nil)
			if p.Status != plan.StatusPlanned {
				t.Fatalf("%s %v %v", p.Status, p.Refusals, p.Waiting)
			}
			first := p.Steps[0]
			switch {
			case c.take == "" && first.Kind == plan.TakeBackup:
				t.Fatalf("asked again for a fresh backup: %s", first.ID)
			case c.take != "" && (first.ID != c.take || first.Kind != plan.TakeBackup):
				t.Fatalf("first step %s, want the backup %s", first.ID, c.take)
			case c.take != "" && (!heldForWindow(first) || hasGate(first, plan.GateBackupFresh, plan.After)):
				// A freshness gate of its own would turn false again as the
				// backup ages and hold the cluster on the merged step.
				t.Fatalf("backup step gates %+v", first.Gates)
			}
			u := step(t, p, "pg-major-upgrade-15.4")
			if !hasGate(u, plan.GateBackupFresh, plan.Before) || !strings.Contains(u.Rollback, "step "+c.relied+" ") {
				t.Fatalf("upgrade gates %+v, rollback %q, want it to name %s", u.Gates, u.Rollback, c.relied)
			}
		})
	}
}

// The freshness the planner's gates ask for is the age past which the
// observer reports a backup stale.
func TestFreshnessBoundsAgree(t *testing.T) {
	for _, c := range []struct{ name, age string }{
		{"major upgrade", MajorUpgradeBackupMaxAge},
		{"any irreversible step", PreStepBackupMaxAge},
		{"the gate", freshBackupGate().MaxAge},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d, err := spec.Duration(c.age).Parse(); err != nil || d != contract.BackupFreshFor {
				t.Fatalf("%s = %v %v, want %v", c.age, d, err, contract.BackupFreshFor)
			}
		})
	}
}

// An etcd minor hop ends in a step that cannot be undone: it starts with a
// snapshot, its last member is gated on a fresh one, and without
// spec.backup it is refused.
func TestEtcdMinorUpgradeNeedsBackup(t *testing.T) {
	// inFlight: e-1 and e-2 run 3.5.21, e-0 still 3.4.37.
	inFlight := func(c *live.Cluster) *live.Cluster {
		return with(c, func(c *live.Cluster) {
			c.StatefulSet.Version, c.StatefulSet.UpdatePartition = "3.5.21", 1
			c.Members[1].Version, c.Members[2].Version = "3.5.21", "3.5.21"
		})
	}
	lastGated := func(id string) func(t *testing.T, p plan.Plan) {
		return func(t *testing.T, p plan.Plan) {
			for _, s := range p.Steps {
				if s.Kind != plan.UpgradeMember {
					continue
				}
				if gated := hasGate(s, plan.GateBackupFresh, plan.Before); gated == s.Reversible {
					t.Errorf("%s: reversible=%v, freshness gate %v", s.ID, s.Reversible, gated)
				}
				if !s.Reversible && !strings.Contains(s.Rollback, "snapshot from step "+id+" ") {
					t.Errorf("%s: rollback %q does not name %s", s.ID, s.Rollback, id)
				}
			}
		}
	}
	runCases(t, []planCase{
		{
			name: "no spec.backup: refused", desired: etcdSpec(t, 3, "3.5.21"), observed: etcdLive(3, "3.4.37", 0),
			status: plan.StatusRefused, refusals: []string{RuleEtcdMinorNeedsBackup}, check: wantRefusal("from 3.4 to 3.5", "configure spec.backup"),
		},
		{
			name: "no spec.backup, a patch upgrade: planned", desired: etcdSpec(t, 3, "3.5.21"), observed: etcdLive(3, "3.5.20", 0),
			status: plan.StatusPlanned, steps: []string{"upgrade-2-to-3.5.21", "upgrade-1-to-3.5.21", "upgrade-0-to-3.5.21"},
		},
		{
			name: "a snapshot first, the last member gated on it", desired: etcdSpec(t, 3, "3.5.21", withEtcdBackup, window), observed: etcdBacked(etcdLive(3, "3.4.37", 0), ""),
			status: plan.StatusPlanned, steps: []string{"backup-before-3.5.21", "upgrade-2-to-3.5.21", "upgrade-1-to-3.5.21", "upgrade-0-to-3.5.21"},
			check: func(t *testing.T, p plan.Plan) {
				lastGated("backup-before-3.5.21")(t, p)
				if heldForWindow(p.Steps[0]) {
					t.Error("3 members restart without disruption: the snapshot is not held for the window")
				}
			},
		},
		{
			name: "one member: the snapshot is held for the window, as the restart is", desired: etcdSpec(t, 1, "3.5.21", withEtcdBackup, window), observed: etcdBacked(etcdLive(1, "3.4.37", 0), ""),
			status: plan.StatusPlanned, steps: []string{"backup-before-3.5.21", "upgrade-0-to-3.5.21"},
			check: func(t *testing.T, p plan.Plan) {
				if !heldForWindow(p.Steps[0]) || !heldForWindow(p.Steps[1]) {
					t.Errorf("window gates %+v", p.Steps)
				}
			},
		},
		{
			name: "the snapshot taken: the hop goes ahead", desired: etcdSpec(t, 3, "3.5.21", withEtcdBackup), observed: etcdBacked(etcdLive(3, "3.4.37", 0), "backup-before-3.5.21"),
			status: plan.StatusPlanned, steps: []string{"upgrade-2-to-3.5.21", "upgrade-1-to-3.5.21", "upgrade-0-to-3.5.21"},
			check: lastGated("backup-before-3.5.21"),
		},
		{
			name: "a hop under way without spec.backup: refused", desired: etcdSpec(t, 3, "3.5.21"), observed: inFlight(etcdLive(3, "3.4.37", 0)),
			status: plan.StatusRefused, refusals: []string{RuleEtcdMinorNeedsBackup},
		},
		{
			name: "a hop under way, its snapshot fresh", desired: etcdSpec(t, 3, "3.5.21", withEtcdBackup), observed: inFlight(etcdBacked(etcdLive(3, "3.4.37", 0), "backup-before-3.5.21")),
			status: plan.StatusPlanned, steps: []string{"upgrade-0-to-3.5.21"}, check: lastGated("backup-before-3.5.21"),
		},
		{
			name: "a hop under way, its snapshot stale: a new one right before the last member", desired: etcdSpec(t, 3, "3.5.21", withEtcdBackup),
			observed: inFlight(with(etcdBacked(etcdLive(3, "3.4.37", 0), "backup-before-3.5.21"), func(c *live.Cluster) { c.Backup.Stale = true })),
			status:   plan.StatusPlanned, steps: []string{"backup-before-3.5.21-2", "upgrade-0-to-3.5.21"}, check: lastGated("backup-before-3.5.21-2"),
		},
		{
			name: "a hop under way, backups not yet running: they are configured before the snapshot", desired: etcdSpec(t, 3, "3.5.21", withEtcdBackup, "storage: 16Gi"),
			observed: inFlight(etcdLive(3, "3.4.37", 0)),
			status:   plan.StatusPlanned, steps: []string{"configure-backup", "backup-before-3.5.21", "upgrade-0-to-3.5.21", "expand-storage-16gi"},
		},
	})
}

// The upgrade's pull request waited a day for review, past its window:
// its backup is stale, so in the next window the plan asks for a new one,
// right before the upgrade, and the upgrade's gates pass once it is served.
func TestStaleBackupIsRetakenInTheNextWindow(t *testing.T) {
	c := pgSpec(t, 3, "15.4", withBackup, window)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	obs := pgBackedAt(pgLive(3, "14.5", 0), 0, "", "backup-before-15.4", false)
	obs.Backup.LastSuccessful = "2026-11-30T22:05:00Z"
	obs.UpgradeCheck = &live.UpgradeCheck{From: 14, To: 15, Result: live.UpgradeCheckPassed}
	fresh := kinds.PlanCluster(c, obs, nil)
	next := at("2026-12-01T22:10:00Z") // the next window, a day later
	if ok, why := gates.Pass(gates.Before(fresh.Steps[0], c, obs, next)); fresh.Steps[0].ID != "pg-major-upgrade-15.4" || ok {
		t.Fatalf("a day later the upgrade %s: gates pass %v (%s); it must not go on a day-old backup", fresh.Steps[0].ID, ok, why)
	}

	obs.Backup.Stale = staleAt(next, obs) // as the observer reports it then
	p := kinds.PlanCluster(c, obs, nil)
	take := p.Steps[0]
	if take.ID != "backup-before-15.4-2" || take.Kind != plan.TakeBackup {
		t.Fatalf("first step %s, want a new backup request", take.ID)
	}
	if ok, why := gates.Pass(gates.Before(take, c, obs, next)); !ok {
		t.Fatalf("the new backup cannot start in the window: %s", why)
	}

	// The runtime serves it.
	obs.Backup.LastRequest, obs.Backup.LastSuccessful, obs.Backup.Stale = take.ID, "2026-12-01T22:20:00Z", false
	p = kinds.PlanCluster(c, obs, nil)
	u := p.Steps[0]
	if u.ID != "pg-major-upgrade-15.4" || !strings.Contains(u.Rollback, "backup-before-15.4-2") {
		t.Fatalf("first step %s, rollback %q", u.ID, u.Rollback)
	}
	if ok, why := gates.Pass(gates.Before(u, c, obs, at("2026-12-01T22:30:00Z"))); !ok {
		t.Fatalf("the upgrade cannot start in the same window: %s", why)
	}
}

// staleAt is whether the observer, at t, reports obs's newest backup stale.
func staleAt(t time.Time, obs *live.Cluster) bool {
	return t.Sub(obs.Backup.LastSuccessful.Time()) > contract.BackupFreshFor
}
