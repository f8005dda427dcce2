package agent

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// leaderMetrics is cairn_runtime_leader{cluster,kind}: 1 on the replica
// that holds the Lease <cluster>-runtime, 0 on the others. Every replica
// exports it, so an alert can tell a standby from a leader and count the
// leaders of a cluster.
type leaderMetrics struct {
	leader prometheus.Gauge
}

func newLeaderMetrics(reg prometheus.Registerer, cluster, kind string) (*leaderMetrics, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_runtime_leader",
		Help:        "1 on the runtime replica that holds the cluster's Lease, 0 on the others.",
		ConstLabels: prometheus.Labels{"cluster": cluster, "kind": kind}})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	return &leaderMetrics{leader: g}, nil
}

// set records whether this replica leads; a nil leaderMetrics records
// nothing.
func (m *leaderMetrics) set(leading bool) {
	if m != nil {
		m.leader.Set(BoolGauge(leading))
	}
}

// stepDown drops what this replica's metrics observed while it led, once
// its passes and backups have stopped.
func (a *Agent) stepDown() {
	a.leader.set(false)
	if o, ok := a.keeper.(Observer); ok {
		o.ForgetObservations()
	}
	a.backups.Metrics.forget()
}

// knowLastBackup shows the last complete backup the backup status
// records in the backup gauges (a new leader knows its predecessor's);
// false when the status could not be read, to try again.
func (a *Agent) knowLastBackup(ctx context.Context) bool {
	if a.backups.Metrics == nil {
		return true
	}
	st, _, err := a.backups.readStatus(ctx)
	if err != nil {
		// Tried again every pass; said once, at Warn: the backup gauges
		// stay absent until it reads.
		if ctx.Err() == nil && !a.statusWarned.Swap(true) {
			a.cfg.Log.Warn("the backup status cannot be read; the backup metrics wait for it", "cluster", a.cfg.Cluster, "err", err.Error())
		}
		return false
	}
	a.backups.Metrics.known(st.LastSuccessful, st.LastFailure)
	return true
}
