package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
)

// windowRun is what happened to a major upgrade planned at a time, with
// every pull request merged the moment its before-gates pass.
type windowRun struct {
	upgradeAt time.Time // zero: the upgrade never started
	backups   int       // backups the plan asked for and the runtime took
	age       time.Duration
}

// tick is the simulation's step: how often cairn evaluates gates.
const tick = 5 * time.Minute

// simulateWindowedUpgrade plays the plan of a PostgreSQL 14.5 -> 15.4
// major upgrade held for window, tick by tick from start for days. Each
// backup takes took, as does the pre-flight check's restore when checked
// is false. The observer marks a backup stale as it does (staleAt). The
// cluster's last scheduled backup took took too, so the runtime's status
// shows how long a backup runs before the first request.
func simulateWindowedUpgrade(t *testing.T, window string, took time.Duration, checked bool, start time.Time, days int) windowRun {
	t.Helper()
	c := pgSpec(t, 3, "15.4", withBackup, window)
	obs := pgBacked(pgLive(3, "14.5", 0))
	obs.Backup.LastStarted = live.Timestamp(start.Add(-30*time.Hour - took).Format(time.RFC3339))
	obs.Backup.LastSuccessful = live.Timestamp(start.Add(-30 * time.Hour).Format(time.RFC3339))
	if checked {
		obs.UpgradeCheck = &live.UpgradeCheck{From: 14, To: 15, Result: live.UpgradeCheckPassed}
	}
	var run windowRun
	var busyUntil time.Time   // the backup or check under way ends then
	var busyWith, s plan.Step // s: the plan's first step, planned again when obs changes
	for now := start; now.Before(start.Add(time.Duration(days) * 24 * time.Hour)); now = now.Add(tick) {
		if !busyUntil.IsZero() {
			if now.Before(busyUntil) {
				continue
			}
			switch busyWith.Kind {
			case plan.TakeBackup:
				obs.Backup.LastRequest = busyWith.ID
				obs.Backup.LastStarted = live.Timestamp(busyUntil.Add(-took).Format(time.RFC3339))
				obs.Backup.LastSuccessful = live.Timestamp(busyUntil.Format(time.RFC3339))
				run.backups++
			case plan.PostgresUpgradeCheck:
				obs.UpgradeCheck = &live.UpgradeCheck{From: 14, To: 15, Result: live.UpgradeCheckPassed}
			}
			busyUntil = time.Time{}
			s = firstStep(t, c, obs, now)
		}
		if stale := staleAt(now, obs); stale != obs.Backup.Stale || s.ID == "" {
			obs.Backup.Stale = stale
			s = firstStep(t, c, obs, now)
		}
		if ok, _ := gates.Pass(gates.Before(s, c, obs, now)); !ok {
			continue
		}
		switch s.Kind {
		case plan.TakeBackup, plan.PostgresUpgradeCheck:
			busyWith, busyUntil = s, now.Add(took)
		case plan.PostgresMajorUpgrade:
			run.upgradeAt, run.age = now, now.Sub(obs.Backup.LastSuccessful.Time())
			return run
		default:
			t.Fatalf("%s: unexpected first step %s (%s)", now, s.ID, s.Kind)
		}
	}
	return run
}

// firstStep plans c on obs and returns the first step.
func firstStep(t *testing.T, c spec.Cluster, obs *live.Cluster, now time.Time) plan.Step {
	t.Helper()
	p := kinds.PlanCluster(c, obs, nil)
	if p.Status != plan.StatusPlanned || len(p.Steps) == 0 {
		t.Fatalf("%s: plan %s: %v", now, p.Status, p.Refusals)
	}
	return p.Steps[0]
}

// nextOpening is when the first window opening at or after from opens.
func nextOpening(t *testing.T, mw *spec.MaintenanceWindow, from time.Time) time.Time {
	t.Helper()
	d, err := mw.Duration.Parse()
	if err != nil {
		t.Fatal(err)
	}
	for at := from; ; {
		open, until, next, err := policies.WindowAt(mw, at)
		switch {
		case err != nil:
			t.Fatal(err)
		case !open:
			return next
		case !until.Add(-d).Before(from):
			return until.Add(-d) // it opened at from itself
		default:
			at = until // open since before from: the next one
		}
	}
}

// windowsOpening counts the windows that open in [from, to].
func windowsOpening(t *testing.T, mw *spec.MaintenanceWindow, from, to time.Time) int {
	t.Helper()
	n := 0
	for at := nextOpening(t, mw, from); !at.After(to); at = nextOpening(t, mw, at.Add(time.Second)) {
		n++
	}
	return n
}

// A backup is taken for the window it will be used in: the request starts
// ahead of the window by as long as the last backup took, so that the
// backup ends as the window opens and the upgrade starts in it, whatever
// the backup's length beside the window's. Before, a backup that outlasted
// its window was stale by the next one and was taken again every time,
// while the upgrade never started.
func TestBackupIsTakenForTheWindowItIsUsedIn(t *testing.T) {
	const (
		daily2h  = "maintenanceWindow: {schedule: '0 22 * * *', duration: 2h}"
		daily1h  = "maintenanceWindow: {schedule: '30 3 * * *', duration: 1h}"
		weekly4h = "maintenanceWindow: {schedule: '0 1 * * 0', duration: 4h, timeZone: Europe/Berlin}"
	)
	maxAge, err := spec.Duration(PreStepBackupMaxAge).Parse()
	if err != nil {
		t.Fatal(err)
	}
	for _, window := range []string{daily2h, daily1h, weekly4h} {
		mw := pgSpec(t, 3, "15.4", withBackup, window).Common().MaintenanceWindow
		for _, took := range []time.Duration{5 * time.Minute, 50 * time.Minute, 3 * time.Hour, 5*time.Hour + 30*time.Minute, 10 * time.Hour, 20 * time.Hour} {
			for _, checked := range []bool{true, false} {
				// Planned at several times of day: a window opening soon,
				// one that is open, one long past.
				for _, h := range []int{0, 7, 13, 21, 23} {
					start := time.Date(2026, 11, 30, h, 10, 0, 0, time.UTC)
					name := fmt.Sprintf("%s/took %s/checked %v/planned at %02d:10", window, took, checked, h)
					run := simulateWindowedUpgrade(t, window, took, checked, start, 30)
					if run.upgradeAt.IsZero() {
						t.Errorf("%s: the upgrade never started in 30 days; %d backups taken", name, run.backups)
						continue
					}
					// The upgrade starts in the first window a backup started
					// when planned can reach. When the pre-flight check must
					// run too, its restore (as long as the backup) follows
					// the backup that ends as that window opens, and a second
					// backup follows when the first grew stale meanwhile:
					// then in the first window that second backup can reach.
					reach, allowed := start.Add(gates.BackupLead(took)), 1
					if !checked {
						reach, allowed = nextOpening(t, mw, reach).Add(2*took+tick), 2
					}
					if n := windowsOpening(t, mw, reach, run.upgradeAt); n > 1 {
						t.Errorf("%s: the upgrade started at %s, in the %dth window after %s (want the first); %d backups taken",
							name, run.upgradeAt.Format(time.RFC3339), n, reach.Format(time.RFC3339), run.backups)
					}
					if run.backups > allowed {
						t.Errorf("%s: %d backups taken for one upgrade, want at most %d", name, run.backups, allowed)
					}
					if run.age > maxAge {
						t.Errorf("%s: the upgrade started on a backup %s old", name, run.age)
					}
				}
			}
		}
	}
}
