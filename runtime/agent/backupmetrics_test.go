package agent

import (
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// gauges returns the value of every series of the backup gauges reg
// holds, by family name (the gauges have no variable label).
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if g := m.GetGauge(); g != nil {
				out[mf.GetName()] = g.GetValue()
			}
		}
	}
	return out
}

// The due and last-failure gauges: what the alerts on a backup that never
// completed, one overdue for its schedule and one whose last attempt
// failed read.
func TestBackupMetricsDueAndFailure(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	sec := func(s string) float64 { return float64(at(s).Unix()) }
	daily, err := backup.Policy{Schedule: "0 2 * * *", Location: "file:///b"}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	hourly, err := backup.Policy{Schedule: "@hourly", Location: "file:///b"}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	done := func(started, finished string) *BackupDone {
		return &BackupDone{ID: "b", Started: at(started), Finished: at(finished), Size: 10}
	}
	for _, c := range []struct {
		name  string
		steps func(m *BackupMetrics)
		want  map[string]float64
	}{
		{"no policy, nothing known: no series", func(m *BackupMetrics) {}, map[string]float64{}},
		{"scheduled, none known: due at the first run after scheduling", func(m *BackupMetrics) {
			m.scheduled(daily, at("2026-11-30T12:00:00Z"))
		}, map[string]float64{"cairn_backup_due_timestamp_seconds": sec("2026-12-01T02:00:00Z")}},
		{"a failure before any success", func(m *BackupMetrics) {
			m.scheduled(daily, at("2026-11-30T12:00:00Z"))
			m.failed(at("2026-12-01T02:00:00Z"))
		}, map[string]float64{
			"cairn_backup_due_timestamp_seconds":          sec("2026-12-01T02:00:00Z"),
			"cairn_backup_last_failure_timestamp_seconds": sec("2026-12-01T02:00:00Z"),
		}},
		{"a complete backup moves due to the next run", func(m *BackupMetrics) {
			m.scheduled(daily, at("2026-11-30T12:00:00Z"))
			m.succeeded(backup.Manifest{Started: at("2026-12-01T02:00:00Z"), Finished: at("2026-12-01T02:10:00Z"), Size: 10}, 10*time.Minute)
		}, map[string]float64{
			"cairn_backup_due_timestamp_seconds":          sec("2026-12-02T02:00:00Z"),
			"cairn_backup_last_success_timestamp_seconds": sec("2026-12-01T02:10:00Z"),
			"cairn_backup_duration_seconds":               600,
			"cairn_backup_bytes":                          10,
		}},
		{"the status's backup known before scheduling: due after it", func(m *BackupMetrics) {
			m.known(done("2026-11-28T02:00:00Z", "2026-11-28T02:05:00Z"), nil)
			m.scheduled(daily, at("2026-11-30T12:00:00Z"))
		}, map[string]float64{
			"cairn_backup_due_timestamp_seconds":          sec("2026-11-29T02:00:00Z"),
			"cairn_backup_last_success_timestamp_seconds": sec("2026-11-28T02:05:00Z"),
			"cairn_backup_duration_seconds":               300,
			"cairn_backup_bytes":                          10,
		}},
		{"the status's failure is known, an older one does not replace it", func(m *BackupMetrics) {
			m.known(nil, &BackupFailure{Time: at("2026-11-30T02:00:00Z"), Error: "boom"})
			m.known(nil, &BackupFailure{Time: at("2026-11-29T02:00:00Z"), Error: "boom"})
		}, map[string]float64{"cairn_backup_last_failure_timestamp_seconds": sec("2026-11-30T02:00:00Z")}},
		{"a changed schedule counts from its change", func(m *BackupMetrics) {
			m.scheduled(daily, at("2026-11-30T12:00:00Z"))
			m.scheduled(hourly, at("2026-11-30T12:30:00Z"))
		}, map[string]float64{"cairn_backup_due_timestamp_seconds": sec("2026-11-30T13:00:00Z")}},
		{"no policy any more: nothing due, the last backup stays", func(m *BackupMetrics) {
			m.scheduled(daily, at("2026-11-30T12:00:00Z"))
			m.known(done("2026-11-28T02:00:00Z", "2026-11-28T02:05:00Z"), nil)
			m.unscheduled()
		}, map[string]float64{
			"cairn_backup_last_success_timestamp_seconds": sec("2026-11-28T02:05:00Z"),
			"cairn_backup_duration_seconds":               300,
			"cairn_backup_bytes":                          10,
		}},
		{"a replica that stops leading forgets everything", func(m *BackupMetrics) {
			m.scheduled(daily, at("2026-11-30T12:00:00Z"))
			m.known(done("2026-11-28T02:00:00Z", "2026-11-28T02:05:00Z"), &BackupFailure{Time: at("2026-11-29T02:00:00Z")})
			m.forget()
		}, map[string]float64{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := NewBackupMetrics(reg, "db")
			if err != nil {
				t.Fatal(err)
			}
			c.steps(m)
			if got := gauges(t, reg); !maps.Equal(got, c.want) {
				t.Errorf("gauges:\n got  %v\n want %v", got, c.want)
			}
		})
	}
}
