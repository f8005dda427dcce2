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
//
// The gauges are the last complete backup the leading replica knows of:
// the one it took, or the one the backup status records when it took the
// lead (known). They have no series before a backup is known, never a
// timestamp of 0, and lose them when the replica stops leading (forget).
type BackupMetrics struct {
	// duration, bytes and last have no variable label: vectors only so
	// that they have no series before a backup is known.
	duration, bytes, last *prometheus.GaugeVec
	failures              prometheus.Counter

	mu sync.Mutex
	// finished is when the backup the gauges show finished; zero while
	// none is known.
	finished time.Time
}

// NewBackupMetrics registers the backup metrics of cluster with reg.
func NewBackupMetrics(reg prometheus.Registerer, cluster string) (*BackupMetrics, error) {
	l := prometheus.Labels{"cluster": cluster}
	m := &BackupMetrics{
		duration: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_backup_duration_seconds", Help: "Duration of the last complete backup.", ConstLabels: l}, nil),
		bytes:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_backup_bytes", Help: "Size of the last complete backup.", ConstLabels: l}, nil),
		last:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_backup_last_success_timestamp_seconds", Help: "When the last complete backup finished, in Unix seconds.", ConstLabels: l}, nil),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_backup_failures_total", Help: "Backups this runtime replica failed to take.", ConstLabels: l}),
	}
	if err := Register(reg, m.duration, m.bytes, m.last, m.failures); err != nil {
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

// known records the last complete backup the backup status records, when
// it is newer than the one the gauges show; nil records nothing.
func (m *BackupMetrics) known(done *BackupDone) {
	if m == nil || done == nil || done.Finished.IsZero() {
		return
	}
	m.set(done.Finished, done.Finished.Sub(done.Started), done.Size)
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
	m.last.WithLabelValues().Set(float64(finished.UnixNano()) / 1e9)
}

func (m *BackupMetrics) failed() {
	if m != nil {
		m.failures.Inc()
	}
}

// forget drops the last backup the replica knew of while it led.
func (m *BackupMetrics) forget() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finished = time.Time{}
	m.duration.Reset()
	m.bytes.Reset()
	m.last.Reset()
}
