package planner

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// The pre-flight check of a major upgrade: after the backup it checks,
// before anything disruptive; planned once, and the upgrade gated on its
// outcome.
func TestUpgradeCheckOrderAndGates(t *testing.T) {
	checked := func(result, reason string, from, to int) func(*live.Cluster) {
		return func(c *live.Cluster) {
			c.UpgradeCheck = &live.UpgradeCheck{From: from, To: to, StorageLocation: "s3://bkp/pg", Result: result, Reason: reason}
		}
	}
	served := func() *live.Cluster { return pgBackedAt(pgLive(3, "14.5", 0), 0, "", "backup-before-15.4", false) }
	runCases(t, []planCase{
		{
			name: "after the backup, before the switchover", desired: pgSpec(t, 3, "15.4", withBackup), observed: pgBacked(pgLive(3, "14.5", 2)),
			status: plan.StatusPlanned, steps: []string{"backup-before-15.4", "pg-upgrade-check-15.4", "switchover-2-to-0-for-15.4", "pg-major-upgrade-15.4", "pg-add-1-to-2"},
			check: func(t *testing.T, p plan.Plan) {
				s := p.Steps[1]
				if s.Kind != plan.PostgresUpgradeCheck || s.Disruptive || !s.Reversible {
					t.Errorf("check step %+v", s)
				}
				if !hasGate(s, plan.GateBackupFresh, plan.Before) || !hasGate(s, plan.GateUpgradeChecked, plan.After) || hasGate(s, plan.GateClusterHealthy, plan.Before) {
					t.Errorf("check step gates %+v", s.Gates)
				}
				want := plan.PostgresUpgradeCheckParams{From: "14.5", To: "15.4", Job: contract.PGUpgradeCheckJob("pg", 14, 15), StorageLocation: "s3://bkp/pg"}
				if got := s.Params.PostgresUpgradeCheck; got == nil || *got != want {
					t.Errorf("params %+v, want %+v", got, want)
				}
				if u := p.Steps[3]; !hasGate(u, plan.GateUpgradeChecked, plan.Before) {
					t.Errorf("the upgrade is not gated on the check: %+v", u.Gates)
				}
			},
		},
		{
			name: "the backup served: the check goes first", desired: pgSpec(t, 3, "15.4", withBackup), observed: served(),
			status: plan.StatusPlanned, steps: []string{"pg-upgrade-check-15.4", "pg-major-upgrade-15.4", "pg-add-1-to-2"},
		},
		{
			name: "passed: the upgrade goes next", desired: pgSpec(t, 3, "15.4", withBackup), observed: with(served(), checked(live.UpgradeCheckPassed, "", 14, 15)),
			status: plan.StatusPlanned, steps: []string{"pg-major-upgrade-15.4", "pg-add-1-to-2"},
		},
		{
			name: "still running: not planned again", desired: pgSpec(t, 3, "15.4", withBackup), observed: with(served(), checked("", "", 14, 15)),
			status: plan.StatusPlanned, steps: []string{"pg-major-upgrade-15.4", "pg-add-1-to-2"},
		},
		{
			name: "refused: not planned again, the upgrade holds", desired: pgSpec(t, 3, "15.4", withBackup), observed: with(served(), checked(live.UpgradeCheckFailed, "Checking for reg* data types in user tables fatal", 14, 15)),
			status: plan.StatusPlanned, steps: []string{"pg-major-upgrade-15.4", "pg-add-1-to-2"},
		},
		{
			name: "a check of another target: checked again", desired: pgSpec(t, 3, "16.2", withBackup),
			observed: with(pgBackedAt(pgLive(3, "14.5", 0), 0, "", "backup-before-16.2", false), checked(live.UpgradeCheckPassed, "", 14, 15)),
			status:   plan.StatusPlanned, steps: []string{"pg-upgrade-check-16.2", "pg-major-upgrade-16.2", "pg-add-1-to-2"},
		},
		{
			name: "an upgrade given up after its check: its Job removed", desired: pgSpec(t, 3, "14.5", withBackup), observed: with(pgBacked(pgLive(3, "14.5", 0)), checked(live.UpgradeCheckFailed, "refused", 14, 15)),
			status: plan.StatusPlanned, steps: []string{"pg-upgrade-check-remove-14-15"},
			check: func(t *testing.T, p plan.Plan) {
				s := p.Steps[0]
				if u := s.Params.PostgresUpgradeCheck; s.Kind != plan.PostgresUpgradeCheck || u == nil || !u.Remove || u.Job != contract.PGUpgradeCheckJob("pg", 14, 15) || s.Disruptive || !hasGate(s, plan.GateUpgradeCheckRemoved, plan.After) {
					t.Errorf("removal step %+v", s)
				}
			},
		},
		{
			name: "given up, then a minor upgrade: the Job goes first", desired: pgSpec(t, 1, "14.6", withBackup), observed: with(pgBacked(pgLive(1, "14.5", 0)), checked(live.UpgradeCheckPassed, "", 14, 15)),
			status: plan.StatusPlanned, steps: []string{"pg-upgrade-check-remove-14-15", "upgrade-0-to-14.6"},
		},
		{
			name: "the upgrade done, a Job the sync kept: left to the sync", desired: pgSpec(t, 1, "15.4", withBackup), observed: with(pgBacked(pgLive(1, "15.4", 0)), checked(live.UpgradeCheckPassed, "", 14, 15)),
			status: plan.StatusConverged,
		},
		{name: "a minor upgrade has none", desired: pgSpec(t, 1, "14.6", withBackup), observed: pgBacked(pgLive(1, "14.5", 0)), status: plan.StatusPlanned, steps: []string{"upgrade-0-to-14.6"}},
	})
}

// A refused check holds the upgrade with pg_upgrade's reason; a passed
// one lets it start.
func TestUpgradeWaitsForItsCheck(t *testing.T) {
	c := pgSpec(t, 3, "15.4", withBackup)
	obs := pgBackedAt(pgLive(3, "14.5", 0), 0, "", "backup-before-15.4", false)
	obs.Backup.LastSuccessful = "2026-11-30T22:05:00Z"
	now := obs.Backup.LastSuccessful.Time().Add(10 * 60e9)
	for _, tc := range []struct {
		result, reason string
		pass           bool
		why            string
	}{
		{live.UpgradeCheckFailed, "Checking for reg* data types in user tables fatal", false, "the check failed"},
		{"", "", false, "still running"},
		{live.UpgradeCheckPassed, "", true, ""},
	} {
		obs.UpgradeCheck = &live.UpgradeCheck{From: 14, To: 15, Result: tc.result, Reason: tc.reason}
		p := kinds.PlanCluster(c, obs, nil)
		u := p.Steps[0]
		ok, why := gates.Pass(gates.Before(u, c, obs, now))
		if u.Kind != plan.PostgresMajorUpgrade || ok != tc.pass || !strings.Contains(why, tc.why) || !strings.Contains(why, tc.reason) {
			t.Errorf("check %q: %s gates pass %v (%s), want %v", tc.result, u.ID, ok, why, tc.pass)
		}
	}
}
