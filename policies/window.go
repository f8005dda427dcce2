package policies

import (
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// SpecWindow holds a cluster's disruptive steps outside the maintenance
// window its spec sets (spec.maintenanceWindow), and says when the step
// can go. Steps that are not disruptive, and clusters without a window,
// get no decision.
type SpecWindow struct {
	// Now is the time the decision is made at.
	Now time.Time
}

// Name implements Policy.
func (SpecWindow) Name() string { return "maintenance-window" }

// Evaluate implements Policy.
func (w SpecWindow) Evaluate(in Input) plan.Decision {
	mw := in.Cluster.Common().MaintenanceWindow
	if !in.Step.Disruptive || mw == nil {
		return plan.Decision{}
	}
	return windowDecision(mw, w.Now)
}

// windowDecision allows a disruptive step while the window is open and
// holds it, saying when the window opens, while it is not.
func windowDecision(mw *spec.MaintenanceWindow, now time.Time) plan.Decision {
	open, until, next, err := WindowAt(mw, now)
	switch {
	case err != nil:
		return plan.Decision{Verdict: plan.Hold, Reason: "the maintenance window cannot be read: " + err.Error()}
	case open:
		return plan.Decision{Verdict: plan.Allow, Reason: "the maintenance window is open until " + until.Format("2006-01-02 15:04 MST")}
	}
	return plan.Decision{Verdict: plan.Hold, Reason: "outside the maintenance window; it opens at " + next.Format("2006-01-02 15:04 MST")}
}

// WindowAt says whether a maintenance window is open at now, until when
// if so, and when it opens next if not. Times are in the window's time
// zone, so daylight saving time moves the window with the wall clock; a
// start that does not exist on a day clocks jump forward is skipped, as
// cron skips it.
func WindowAt(mw *spec.MaintenanceWindow, now time.Time) (open bool, until, next time.Time, err error) {
	sched, err := mw.Schedule.Parse()
	if err != nil {
		return false, time.Time{}, time.Time{}, err
	}
	d, err := mw.Duration.Parse()
	if err != nil {
		return false, time.Time{}, time.Time{}, err
	}
	loc, err := time.LoadLocation(mw.TimeZone)
	if err != nil {
		return false, time.Time{}, time.Time{}, fmt.Errorf("time zone %q: %w", mw.TimeZone, err)
	}
	now = now.In(loc)
	// A window is [start, start+d). The first start after now-d is the
	// only one whose window can hold now.
	start := sched.Next(now.Add(-d))
	if !start.After(now) {
		return true, start.Add(d), time.Time{}, nil
	}
	return false, time.Time{}, start, nil
}
