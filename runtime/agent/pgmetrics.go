package agent

import "github.com/prometheus/client_golang/prometheus"

// PostgresMetrics are the PostgreSQL keeper's metrics (Postgres registers
// them only for a PostgreSQL cluster), kept by the leading replica:
//
//	cairn_postgres_failovers_total          failovers carried out
//	cairn_postgres_last_failover_seconds    how long the last one took, recorded to promoted
//	cairn_postgres_primary{member}          1 for the member that is primary, 0 for the others
//	cairn_postgres_replica_lag_bytes{member} the primary's WAL position less what the replica replayed
type PostgresMetrics struct {
	failovers prometheus.Counter
	last      prometheus.Gauge
	primary   *prometheus.GaugeVec
	lag       *prometheus.GaugeVec
}

// NewPostgresMetrics registers the PostgreSQL metrics of cluster's
// runtime with reg.
func NewPostgresMetrics(reg prometheus.Registerer, cluster string) (*PostgresMetrics, error) {
	labels := prometheus.Labels{"cluster": cluster}
	m := &PostgresMetrics{
		failovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_postgres_failovers_total", Help: "Failovers the runtime carried out.", ConstLabels: labels}),
		last:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_postgres_last_failover_seconds", Help: "Seconds the last failover took, from recorded to promoted.", ConstLabels: labels}),
		primary:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_primary", Help: "1 for the member that answers as the one primary.", ConstLabels: labels}, []string{"member"}),
		lag:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_replica_lag_bytes", Help: "Bytes of the primary's WAL a replica has not replayed.", ConstLabels: labels}, []string{"member"}),
	}
	for _, c := range []prometheus.Collector{m.failovers, m.last, m.primary, m.lag} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe records a pass; a nil PostgresMetrics records nothing.
func (m *PostgresMetrics) observe(members, primaries []pgMember) {
	if m == nil {
		return
	}
	for _, mem := range members {
		isPrimary := len(primaries) == 1 && primaries[0].Name == mem.Name
		m.primary.WithLabelValues(mem.Name).Set(boolGauge(isPrimary))
		if len(primaries) != 1 || !mem.replica() {
			m.lag.DeleteLabelValues(mem.Name)
			continue
		}
		lag := float64(0)
		if p := primaries[0].Probe.Received; p > mem.Probe.Replayed {
			lag = float64(p - mem.Probe.Replayed)
		}
		m.lag.WithLabelValues(mem.Name).Set(lag)
	}
}

func (m *PostgresMetrics) failedOver(seconds float64) {
	if m == nil {
		return
	}
	m.failovers.Inc()
	m.last.Set(seconds)
}
