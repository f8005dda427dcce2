package agent

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// BackupMetrics are the runtime's backup metrics, of every kind (New
// registers them):
//
//	cairn_backup_duration_seconds               the last complete backup's duration
//	cairn_backup_bytes                          the last complete backup's size
//	cairn_backup_last_success_timestamp_seconds when the last complete backup finished
//	cairn_backup_failures_total                 backups this replica failed to take
//	cairn_backup_last_failure_timestamp_seconds when the last failed backup started
//	cairn_backup_due_timestamp_seconds          when a complete backup was due
//
// The first three gauges are the last complete backup the leading replica
// knows of: the one it took, or the one the backup status records when it
// took the lead (known). The last failure is the one it saw fail or the
// status records. Due is the first scheduled run after the last complete
// backup, or, with none known, after the leader began scheduling. They
// have no series before what they tell is known, never a timestamp of 0,
// and lose them when the replica stops leading (forget); due also when
// the cluster has no backup policy (unscheduled).
type BackupMetrics struct {
	// The gauges have no variable label: vectors only so that they have
	// no series before what they tell is known.
	duration, bytes, last, lastFailure, due *prometheus.GaugeVec
	failures                                prometheus.Counter

	mu sync.Mutex
	// finished is when the backup the gauges show finished; zero while
	// none is known. failedAt is when the last failure shown started.
	finished, failedAt time.Time
	// sched is the policy's schedule while one is on, and since when the
	// leader has scheduled it.
	sched *backup.Schedule
	since time.Time
}

// NewBackupMetrics registers the backup metrics of cluster with reg.
func NewBackupMetrics(reg prometheus.Registerer, cluster string) (*BackupMetrics, error) {
	l := prometheus.Labels{"cluster": cluster}
	m := &BackupMetrics{
		duration: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_backup_duration_seconds", Help: "Duration of the last complete backup.", ConstLabels: l}, nil),
		bytes:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_backup_bytes", Help: "Size of the last complete backup.", ConstLabels: l}, nil),
		last:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_backup_last_success_timestamp_seconds", Help: "When the last complete backup finished, in Unix seconds.", ConstLabels: l}, nil),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_backup_failures_total", Help: "Backups this runtime replica failed to take.", ConstLabels: l}),
		lastFailure: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_backup_last_failure_timestamp_seconds",
			Help: "When the last failed backup started, in Unix seconds.", ConstLabels: l}, nil),
		due: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_backup_due_timestamp_seconds",
			Help: "When a complete backup was due, in Unix seconds: the first scheduled run after the last complete backup, or after the leader began scheduling when none is known.", ConstLabels: l}, nil),
	}
	if err := Register(reg, m.duration, m.bytes, m.last, m.failures, m.lastFailure, m.due); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *BackupMetrics) succeeded(b backup.Manifest, took time.Duration) {
	if m == nil {
		return
	}
	m.set(b.Finished, took, b.Size)
}

// known records the last complete backup and the last failure the backup
// status records, each when it is newer than the one the gauges show; nil
// records nothing.
func (m *BackupMetrics) known(done *BackupDone, failure *BackupFailure) {
	if m == nil {
		return
	}
	if done != nil && !done.Finished.IsZero() {
		m.set(done.Finished, done.Finished.Sub(done.Started), done.Size)
	}
	if failure != nil {
		m.failedSince(failure.Time)
	}
}

func (m *BackupMetrics) set(finished time.Time, took time.Duration, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if finished.Before(m.finished) {
		return
	}
	m.finished = finished
	m.duration.WithLabelValues().Set(max(took, 0).Seconds())
	m.bytes.WithLabelValues().Set(float64(size))
	m.last.WithLabelValues().Set(unixSeconds(finished))
	m.setDue()
}

// failed counts a backup this replica failed to take, started at start.
func (m *BackupMetrics) failed(start time.Time) {
	if m == nil {
		return
	}
	m.failures.Inc()
	m.failedSince(start)
}

// failedSince shows the failure that started at start, unless a later
// one is shown; a zero start shows nothing.
func (m *BackupMetrics) failedSince(start time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if start.IsZero() || start.Before(m.failedAt) {
		return
	}
	m.failedAt = start
	m.lastFailure.WithLabelValues().Set(unixSeconds(start))
}

// scheduled records the policy's schedule s, on since now: a changed
// policy is scheduled anew.
func (m *BackupMetrics) scheduled(s backup.Schedule, now time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sched, m.since = &s, now
	m.setDue()
}

// unscheduled records that the cluster has no backup policy: nothing is
// due.
func (m *BackupMetrics) unscheduled() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sched, m.since = nil, time.Time{}
	m.due.Reset()
}

// setDue shows when a complete backup was due; m.mu is held.
func (m *BackupMetrics) setDue() {
	if m.sched == nil {
		return
	}
	from := m.finished
	if from.IsZero() {
		from = m.since
	}
	next := m.sched.NextAfter(from)
	if next.IsZero() {
		m.due.Reset() // a schedule that never runs
		return
	}
	m.due.WithLabelValues().Set(unixSeconds(next))
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// forget drops the last backup the replica knew of while it led.
func (m *BackupMetrics) forget() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finished, m.failedAt = time.Time{}, time.Time{}
	m.sched, m.since = nil, time.Time{}
	for _, g := range []*prometheus.GaugeVec{m.duration, m.bytes, m.last, m.lastFailure, m.due} {
		g.Reset()
	}
}
