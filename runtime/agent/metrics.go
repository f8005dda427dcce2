package agent

import "github.com/prometheus/client_golang/prometheus"

// EtcdMetrics are the etcd keeper's metrics (Etcd registers them only
// for an etcd cluster), kept by the leading replica:
//
//	cairn_etcd_members{role}                   members by role: voter, learner
//	cairn_etcd_quorum                          1 while more than half of the voters are healthy
//	cairn_etcd_has_leader                      1 while a healthy member leads
//	cairn_etcd_membership_changes_total{change} promotions, removals, replacements, leader moves made
type EtcdMetrics struct {
	members *prometheus.GaugeVec
	quorum  prometheus.Gauge
	leader  prometheus.Gauge
	changes *prometheus.CounterVec
}

// NewEtcdMetrics registers the etcd metrics of cluster's runtime with reg.
func NewEtcdMetrics(reg prometheus.Registerer, cluster string) (*EtcdMetrics, error) {
	labels := prometheus.Labels{"cluster": cluster}
	m := &EtcdMetrics{
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_etcd_members", Help: "etcd members by role (voter, learner), as the runtime last saw them.", ConstLabels: labels}, []string{"role"}),
		quorum:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_etcd_quorum", Help: "1 while more than half of the etcd voters are healthy.", ConstLabels: labels}),
		leader:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_etcd_has_leader", Help: "1 while a healthy etcd member leads.", ConstLabels: labels}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_etcd_membership_changes_total", Help: "Membership changes the runtime made: promote, remove, replace, move-leader.", ConstLabels: labels}, []string{"change"}),
	}
	for _, c := range []prometheus.Collector{m.members, m.quorum, m.leader, m.changes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, c := range []string{"promote", "remove", "replace", "move-leader"} {
		m.changes.WithLabelValues(c)
	}
	m.members.WithLabelValues("voter")
	m.members.WithLabelValues("learner")
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
	m.quorum.Set(boolGauge(st.Quorum))
	m.leader.Set(leader)
	if changed {
		change := a.Kind.String()
		if a.Replace {
			change = "replace"
		}
		m.changes.WithLabelValues(change).Inc()
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
