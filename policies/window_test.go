package policies

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

func window(schedule, duration, tz string) *spec.MaintenanceWindow {
	return &spec.MaintenanceWindow{Schedule: spec.Schedule(schedule), Duration: spec.Duration(duration), TimeZone: tz}
}

func at(t *testing.T, tz, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWindowAt(t *testing.T) {
	const berlin = "Europe/Berlin"
	tests := []struct {
		name string
		w    *spec.MaintenanceWindow
		now  time.Time
		open bool
		edge string // until when open, next start when closed
	}{
		{"inside a weekday window", window("0 22 * * 1-5", "2h", berlin), at(t, berlin, "2026-11-30 23:15"), true, "2026-12-01 00:00 CET"},
		{"before it opens", window("0 22 * * 1-5", "2h", berlin), at(t, berlin, "2026-11-30 21:59"), false, "2026-11-30 22:00 CET"},
		{"the minute it opens", window("0 22 * * 1-5", "2h", berlin), at(t, berlin, "2026-11-30 22:00"), true, "2026-12-01 00:00 CET"},
		{"the minute it closes", window("0 22 * * 1-5", "2h", berlin), at(t, berlin, "2026-12-01 00:00"), false, "2026-12-01 22:00 CET"},
		{"friday night to monday", window("0 22 * * 1-5", "2h", berlin), at(t, berlin, "2026-12-05 12:00"), false, "2026-12-07 22:00 CET"},
		{"in UTC the same instant is another hour", window("0 22 * * *", "1h", "UTC"), at(t, berlin, "2026-11-30 23:30"), true, "2026-11-30 23:00 UTC"},
		// Clocks jump 02:00 -> 03:00 on 2026-03-29 in Berlin: 02:30 does
		// not exist that day, and cron skips the start.
		{"spring forward skips a start that does not exist", window("30 2 * * *", "1h", berlin), at(t, berlin, "2026-03-29 01:00"), false, "2026-03-30 02:30 CEST"},
		// Clocks fall back 03:00 -> 02:00 on 2026-10-25: a window opening
		// at 01:30 CEST for 2h ends two real hours later, at 02:30 CET.
		{"fall back keeps the duration in real time", window("30 1 * * *", "2h", berlin), at(t, "UTC", "2026-10-25 01:15"), true, "2026-10-25 02:30 CET"},
		{"and is closed after it", window("30 1 * * *", "2h", berlin), at(t, "UTC", "2026-10-25 01:45"), false, "2026-10-26 01:30 CET"},
		{"a window longer than a day", window("0 0 * * 6", "48h", "UTC"), at(t, "UTC", "2026-12-06 23:00"), true, "2026-12-07 00:00 UTC"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			open, until, next, err := WindowAt(tc.w, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			edge := next
			if open {
				edge = until
			}
			if open != tc.open || edge.Format("2006-01-02 15:04 MST") != tc.edge {
				t.Fatalf("open=%v edge=%s, want open=%v edge=%s", open, edge.Format("2006-01-02 15:04 MST"), tc.open, tc.edge)
			}
		})
	}
}

func TestSpecWindowHoldsThenAllows(t *testing.T) {
	cs, err := spec.Decode("pg.yaml", []byte(`apiVersion: db.example.com/v1alpha1
kind: PostgresCluster
metadata: {name: pg}
spec:
  version: "14.9"
  instances: 1
  storage: 10Gi
  maintenanceWindow: {schedule: "0 22 * * *", duration: 2h, timeZone: Europe/Berlin}
`))
	if err != nil {
		t.Fatal(err)
	}
	disruptive := plan.Step{ID: "upgrade-0-to-14.9", Disruptive: true}
	held := SpecWindow{Now: at(t, "Europe/Berlin", "2026-11-30 12:00")}.Evaluate(Input{Cluster: cs[0], Step: disruptive})
	if held.Verdict != plan.Hold || !strings.Contains(held.Reason, "opens at 2026-11-30 22:00 CET") {
		t.Errorf("%+v", held)
	}
	// With a fake clock at the window's opening, the held step goes ahead.
	open := SpecWindow{Now: at(t, "Europe/Berlin", "2026-11-30 22:00")}.Evaluate(Input{Cluster: cs[0], Step: disruptive})
	if open.Verdict != plan.Allow {
		t.Errorf("%+v", open)
	}
	if d := (SpecWindow{Now: time.Now()}).Evaluate(Input{Cluster: cs[0], Step: plan.Step{ID: "pg-add-1"}}); d.Verdict != "" {
		t.Errorf("a step that is not disruptive gets no decision: %+v", d)
	}
}
