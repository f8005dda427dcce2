package etcd

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/runtime/agent"
)

// EtcdMetrics are the etcd keeper's metrics (Etcd registers them only
// for an etcd cluster):
//
//	cairn_etcd_members{role}                    members by role: voter, learner
//	cairn_etcd_quorum                           1 while more than half of the voters are healthy
//	cairn_etcd_has_leader                       1 while a healthy member leads
//	cairn_etcd_membership_changes_total{change} promotions, removals, replacements, leader moves made
//
// The gauges are what the leading replica observed: they have no series
// until it has made a pass, and lose them when it stops leading (forget),
// so a standby never reports a quorum of 0. The counter counts what this
// replica did, 0 on a standby.
type EtcdMetrics struct {
	members *prometheus.GaugeVec
	// quorum and leader have no variable label: a vector only so that
	// they have no series before the first observation.
	quorum, leader *prometheus.GaugeVec
	changes        *prometheus.CounterVec
	// maint are the maintenance metrics (maintmetrics.go).
	maint *etcdMaintMetrics
}

// NewEtcdMetrics registers the etcd metrics of cluster's runtime with reg.
func NewEtcdMetrics(reg prometheus.Registerer, cluster string) (*EtcdMetrics, error) {
	labels := prometheus.Labels{"cluster": cluster}
	m := &EtcdMetrics{
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_etcd_members", Help: "etcd members by role (voter, learner), as the leading runtime last saw them.", ConstLabels: labels}, []string{"role"}),
		quorum:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_etcd_quorum", Help: "1 while more than half of the etcd voters are healthy, as the leading runtime last saw them.", ConstLabels: labels}, nil),
		leader:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_etcd_has_leader", Help: "1 while a healthy etcd member leads, as the leading runtime last saw them.", ConstLabels: labels}, nil),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_etcd_membership_changes_total", Help: "Membership changes this runtime replica made: promote, remove, replace, move-leader.", ConstLabels: labels}, []string{"change"}),
	}
	if err := agent.Register(reg, m.members, m.quorum, m.leader, m.changes); err != nil {
		return nil, err
	}
	for _, c := range []string{"promote", "remove", "replace", "move-leader"} {
		m.changes.WithLabelValues(c)
	}
	maint, err := newEtcdMaintMetrics(reg, labels)
	if err != nil {
		return nil, err
	}
	m.maint = maint
	return m, nil
}

// observe records a pass; a nil EtcdMetrics records nothing.
func (m *EtcdMetrics) observe(st etcdStatus, a action, changed bool) {
	if m == nil {
		return
	}
	voters, learners, leader := 0, 0, 0.0
	for _, mem := range st.Members {
		if mem.Learner {
			learners++
		} else {
			voters++
		}
		if mem.Leader {
			leader = 1
		}
	}
	m.members.WithLabelValues("voter").Set(float64(voters))
	m.members.WithLabelValues("learner").Set(float64(learners))
	m.quorum.WithLabelValues().Set(agent.BoolGauge(st.Quorum))
	m.leader.WithLabelValues().Set(leader)
	if changed {
		change := a.Kind.String()
		if a.Replace {
			change = "replace"
		}
		m.changes.WithLabelValues(change).Inc()
	}
}

// forget drops what the replica observed while it led.
func (m *EtcdMetrics) forget() {
	if m == nil {
		return
	}
	m.members.Reset()
	m.quorum.Reset()
	m.leader.Reset()
	m.maint.forget()
}
