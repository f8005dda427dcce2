package etcd

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// etcdMaintMetrics are the metrics of etcd maintenance (part of
// EtcdMetrics):
//
//	cairn_etcd_alarms{alarm}                  members with the alarm raised (NOSPACE, CORRUPT, ...)
//	cairn_etcd_db_size_bytes{member}          the member's database file
//	cairn_etcd_db_size_in_use_bytes{member}   the part of it that holds data
//	cairn_etcd_space_quota_bytes              the space quota of the rendered config
//	cairn_etcd_maintenance_total{action}      compactions, defragmentations, disarms made
//
// As the other etcd gauges, they are the leading replica's and have no
// series until its first pass; the counter counts what this replica did.
type etcdMaintMetrics struct {
	alarms, dbSize, dbInUse *prometheus.GaugeVec
	quota                   *prometheus.GaugeVec
	actions                 *prometheus.CounterVec
}

func newEtcdMaintMetrics(reg prometheus.Registerer, labels prometheus.Labels) (*etcdMaintMetrics, error) {
	m := &etcdMaintMetrics{
		alarms:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_etcd_alarms", Help: "etcd members with the alarm raised (NOSPACE, CORRUPT), as the leading runtime last listed them.", ConstLabels: labels}, []string{"alarm"}),
		dbSize:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_etcd_db_size_bytes", Help: "Size of the etcd member's database file, as it last reported it to the leading runtime.", ConstLabels: labels}, []string{"member"}),
		dbInUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_etcd_db_size_in_use_bytes", Help: "The part of the etcd member's database file that holds data; the rest is free pages a defragmentation gives back.", ConstLabels: labels}, []string{"member"}),
		quota:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_etcd_space_quota_bytes", Help: "The etcd space quota the rendered config sets (etcd's default, 2 GiB, when it sets none).", ConstLabels: labels}, nil),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_etcd_maintenance_total", Help: "etcd maintenance this runtime replica did: compact, defrag, disarm.", ConstLabels: labels}, []string{"action"}),
	}
	if err := agent.Register(reg, m.alarms, m.dbSize, m.dbInUse, m.quota, m.actions); err != nil {
		return nil, err
	}
	for _, a := range []maintKind{maintCompact, maintDefrag, maintDisarm} {
		m.actions.WithLabelValues(a.String())
	}
	return m, nil
}

// observeMaint records a maintenance pass; a nil EtcdMetrics records
// nothing.
func (e *EtcdMetrics) observeMaint(st contract.EtcdMaintenanceStatus, quota int64, a maintAction, r maintResult) {
	if e == nil || e.maint == nil {
		return
	}
	m := e.maint
	m.alarms.Reset()
	for _, name := range []string{contract.EtcdAlarmNoSpace, contract.EtcdAlarmCorrupt} {
		m.alarms.WithLabelValues(name) // 0 while not raised
	}
	for _, x := range st.Alarms {
		m.alarms.WithLabelValues(x.Alarm).Inc()
	}
	m.dbSize.Reset()
	m.dbInUse.Reset()
	for _, mem := range st.Members {
		if mem.Name != "" && mem.DBSize > 0 {
			m.dbSize.WithLabelValues(mem.Name).Set(float64(mem.DBSize))
			m.dbInUse.WithLabelValues(mem.Name).Set(float64(mem.DBSizeInUse))
		}
	}
	m.quota.WithLabelValues().Set(float64(quota))
	if a.Kind != maintNone && r.Done {
		m.actions.WithLabelValues(a.Kind.String()).Inc()
	}
}

// forget drops what the replica observed while it led.
func (m *etcdMaintMetrics) forget() {
	if m == nil {
		return
	}
	m.alarms.Reset()
	m.dbSize.Reset()
	m.dbInUse.Reset()
	m.quota.Reset()
}
