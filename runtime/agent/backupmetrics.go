package agent

import (
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
//	cairn_backup_failures_total                 failed backups
type BackupMetrics struct {
	duration, bytes, last prometheus.Gauge
	failures              prometheus.Counter
}

// NewBackupMetrics registers the backup metrics of cluster with reg.
func NewBackupMetrics(reg prometheus.Registerer, cluster string) (*BackupMetrics, error) {
	l := prometheus.Labels{"cluster": cluster}
	m := &BackupMetrics{
		duration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_backup_duration_seconds", Help: "Duration of the last complete backup.", ConstLabels: l}),
		bytes:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_backup_bytes", Help: "Size of the last complete backup.", ConstLabels: l}),
		last:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_backup_last_success_timestamp_seconds", Help: "When the last complete backup finished, in Unix seconds.", ConstLabels: l}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_backup_failures_total", Help: "Backups that failed.", ConstLabels: l}),
	}
	for _, c := range []prometheus.Collector{m.duration, m.bytes, m.last, m.failures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *BackupMetrics) succeeded(b backup.Manifest, took time.Duration) {
	if m == nil {
		return
	}
	m.duration.Set(took.Seconds())
	m.bytes.Set(float64(b.Size))
	m.last.Set(float64(b.Finished.Unix()))
}

func (m *BackupMetrics) failed() {
	if m != nil {
		m.failures.Inc()
	}
}
