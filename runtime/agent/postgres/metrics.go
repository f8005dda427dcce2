package postgres

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/runtime/agent"
)

// PostgresMetrics are the PostgreSQL keeper's metrics (Postgres registers
// them only for a PostgreSQL cluster):
//
//	cairn_postgres_failovers_total           failovers this replica carried out
//	cairn_postgres_last_failover_seconds     how long its last one took, recorded to promoted
//	cairn_postgres_primary{member}           1 for the member that is primary, 0 for the others
//	cairn_postgres_replica_lag_bytes{member} the primary's WAL position less what the replica replayed
//	cairn_postgres_replica_wal_removed{member}
//	                                         1 while a replica needs WAL the primary no longer keeps
//	cairn_postgres_certificate_expiry_timestamp_seconds{secret}
//	                                         when the certificate in each of the cluster's certificate Secrets ends (TLS on)
//	cairn_postgres_wal_last_archived_timestamp_seconds{member}
//	                                         when the primary last archived a WAL segment (archiving on)
//	cairn_postgres_wal_archive_failing{member}
//	                                         1 while the primary's last archive attempt failed
//	cairn_postgres_wal_archive_pending_segments{member}
//	                                         segments in the primary's pg_wal waiting to be archived
//	cairn_postgres_wal_bytes{member}         the size of the primary's pg_wal
//	cairn_postgres_wal_bound_bytes{member}   its max_wal_size + wal_keep_size: what pg_wal stays within unless WAL is held
//	cairn_postgres_replica_streaming{member} 1 for a member other than the primary whose WAL receiver streams, 0 for the others
//
// The gauges are what the leading replica observed or did: they have no
// series until it has, and lose them when it stops leading (forget). The
// counter counts what this replica did, 0 on a standby.
type PostgresMetrics struct {
	failovers prometheus.Counter
	// last has no variable label: a vector only so that it has no
	// series before the first failover.
	last    *prometheus.GaugeVec
	primary *prometheus.GaugeVec
	lag     *prometheus.GaugeVec
	removed *prometheus.GaugeVec
	expiry  *prometheus.GaugeVec
	// The primary's WAL archiver and pg_wal.
	archived, failing, pending, walBytes, walBound *prometheus.GaugeVec
	streaming                                      *prometheus.GaugeVec

	mu sync.Mutex
	// members are the members the gauges have series of.
	members map[string]bool
}

// NewPostgresMetrics registers the PostgreSQL metrics of cluster's
// runtime with reg.
func NewPostgresMetrics(reg prometheus.Registerer, cluster string) (*PostgresMetrics, error) {
	labels := prometheus.Labels{"cluster": cluster}
	m := &PostgresMetrics{
		failovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_postgres_failovers_total", Help: "Failovers this runtime replica carried out.", ConstLabels: labels}),
		last:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_last_failover_seconds", Help: "Seconds the last failover of the leading runtime took, from recorded to promoted.", ConstLabels: labels}, nil),
		primary:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_primary", Help: "1 for the member that answers as the one primary, 0 for the others, as the leading runtime last saw them.", ConstLabels: labels}, []string{"member"}),
		lag:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_replica_lag_bytes", Help: "Bytes of the primary's WAL a replica has not replayed, as the leading runtime last saw them.", ConstLabels: labels}, []string{"member"}),
		removed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_replica_wal_removed",
			Help: "1 while a replica needs WAL the primary no longer keeps (its instance manager reads it from the archive or re-clones it), 0 otherwise.", ConstLabels: labels}, []string{"member"}),
		expiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_certificate_expiry_timestamp_seconds",
			Help: "When the certificate in each of the cluster's certificate Secrets ends (Unix seconds), as the leading runtime last checked them; the runtime renews leaves past two thirds of their lifetime.", ConstLabels: labels}, []string{"secret"}),
		archived: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_wal_last_archived_timestamp_seconds",
			Help: "When the primary last archived a WAL segment (Unix seconds; pg_stat_archiver), while archiving is on.", ConstLabels: labels}, []string{"member"}),
		failing: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_wal_archive_failing",
			Help: "1 while the primary's last WAL archive attempt failed (it retries; nothing is deleted), 0 otherwise.", ConstLabels: labels}, []string{"member"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_wal_archive_pending_segments",
			Help: "WAL segments in the primary's pg_wal waiting to be archived: PostgreSQL keeps each until it is.", ConstLabels: labels}, []string{"member"}),
		walBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_wal_bytes",
			Help: "Bytes in the primary's pg_wal.", ConstLabels: labels}, []string{"member"}),
		walBound: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_wal_bound_bytes",
			Help: "The primary's max_wal_size + wal_keep_size in bytes: what pg_wal stays within unless WAL is held (an archive that fails or lags, a replication slot).", ConstLabels: labels}, []string{"member"}),
		streaming: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_postgres_replica_streaming",
			Help: "1 for a member other than the primary whose WAL receiver streams from it, 0 for one that does not (down, not answering, or not streaming), as the leading runtime last saw them.", ConstLabels: labels}, []string{"member"}),
		members: map[string]bool{},
	}
	if err := agent.Register(reg, m.failovers, m.last, m.primary, m.lag, m.removed, m.expiry, m.archived, m.failing, m.pending, m.walBytes, m.walBound, m.streaming); err != nil {
		return nil, err
	}
	return m, nil
}

// observe records a pass; a nil PostgresMetrics records nothing. A member
// gone since the last pass loses its series.
func (m *PostgresMetrics) observe(members, primaries []pgMember) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make(map[string]bool, len(members))
	for _, mem := range members {
		seen[mem.Name] = true
		isPrimary := len(primaries) == 1 && primaries[0].Name == mem.Name
		m.primary.WithLabelValues(mem.Name).Set(agent.BoolGauge(isPrimary))
		m.archive(mem, isPrimary)
		m.replicaStreaming(mem, len(primaries) == 1 && !isPrimary)
		if len(primaries) != 1 || !mem.replica() {
			m.lag.DeleteLabelValues(mem.Name)
			continue
		}
		m.lag.WithLabelValues(mem.Name).Set(float64(replayLag(primaries[0], mem)))
	}
	for name := range m.members {
		if !seen[name] {
			for _, g := range []*prometheus.GaugeVec{m.primary, m.lag, m.removed, m.archived, m.failing, m.pending, m.walBytes, m.walBound, m.streaming} {
				g.DeleteLabelValues(name)
			}
		}
	}
	m.members = seen
}

// archive records the primary's WAL archiver; other members have no
// series.
func (m *PostgresMetrics) archive(mem pgMember, isPrimary bool) {
	a := mem.Probe.Archive
	if !isPrimary || !a.On {
		for _, g := range []*prometheus.GaugeVec{m.archived, m.failing, m.pending, m.walBytes, m.walBound} {
			g.DeleteLabelValues(mem.Name)
		}
		return
	}
	if a.LastArchivedAt.IsZero() {
		m.archived.DeleteLabelValues(mem.Name)
	} else {
		m.archived.WithLabelValues(mem.Name).Set(float64(a.LastArchivedAt.UnixNano()) / 1e9)
	}
	m.failing.WithLabelValues(mem.Name).Set(agent.BoolGauge(a.failing()))
	m.pending.WithLabelValues(mem.Name).Set(float64(a.Pending))
	m.walBytes.WithLabelValues(mem.Name).Set(float64(a.WALBytes))
	m.walBound.WithLabelValues(mem.Name).Set(float64(a.WALBound))
}

// replicaStreaming records whether a member that should stream (not the
// one primary, while there is one) does: 0 for one that is down, does not
// answer or answers without a streaming WAL receiver. Without one primary
// no member has a series.
func (m *PostgresMetrics) replicaStreaming(mem pgMember, shouldStream bool) {
	if !shouldStream {
		m.streaming.DeleteLabelValues(mem.Name)
		return
	}
	m.streaming.WithLabelValues(mem.Name).Set(agent.BoolGauge(mem.replica() && mem.Probe.Streaming))
}

// walRemoved records which members need WAL the primary no longer keeps
// (the status's record): 1 for those, 0 for the other replicas; members
// that are neither have no series.
func (m *PostgresMetrics) walRemoved(members []pgMember, removed map[string]string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mem := range members {
		_, behind := removed[mem.Name]
		switch {
		case behind || mem.replica():
			m.removed.WithLabelValues(mem.Name).Set(agent.BoolGauge(behind))
		default:
			m.removed.DeleteLabelValues(mem.Name)
		}
	}
}

// certificates records when the cluster's certificates end, by Secret;
// nil ends (TLS off, or not checked) leave the series as they are.
func (m *PostgresMetrics) certificates(ends map[string]time.Time) {
	if m == nil || ends == nil {
		return
	}
	m.expiry.Reset()
	for secret, end := range ends {
		m.expiry.WithLabelValues(secret).Set(float64(end.Unix()))
	}
}

func (m *PostgresMetrics) failedOver(seconds float64) {
	if m == nil {
		return
	}
	m.failovers.Inc()
	m.last.WithLabelValues().Set(seconds)
}

// forget drops what the replica observed and did while it led.
func (m *PostgresMetrics) forget() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last.Reset()
	m.primary.Reset()
	m.lag.Reset()
	m.removed.Reset()
	m.expiry.Reset()
	for _, g := range []*prometheus.GaugeVec{m.archived, m.failing, m.pending, m.walBytes, m.walBound, m.streaming} {
		g.Reset()
	}
	m.members = map[string]bool{}
}
