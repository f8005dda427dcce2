package reconcile

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
)

// Metrics are the loop's metrics (Config.Metrics), as Run's passes keep
// them (docs/metrics.md):
//
//	cairn_reconcile_pass_duration_seconds            histogram of the passes' durations
//	cairn_reconcile_passes_total{result}             passes by result: ok, error
//	cairn_reconcile_last_pass_timestamp_seconds      when the last pass ended
//	cairn_reconcile_clusters{status}                 clusters by the status of their plan in the last pass
//	cairn_reconcile_pull_requests_total{action}      pull requests cairn opened, updated, closed, merged
//	cairn_reconcile_step_waiting_seconds{cluster}    how long the step merged last has waited for its gates
//
// A pass that a cancelled context interrupts counts as none. Nothing
// looks like a fact before it is one: the gauges have no series before
// the first pass, step_waiting_seconds only for the clusters held.
type Metrics struct {
	duration prometheus.Histogram
	passes   *prometheus.CounterVec
	// last and clusters are vectors so that they have no series before
	// the first pass.
	last     *prometheus.GaugeVec
	clusters *prometheus.GaugeVec
	prs      *prometheus.CounterVec
	waiting  *prometheus.GaugeVec

	mu sync.Mutex
	// lastPass is when the last pass ended; lastOK when the last pass
	// that succeeded did.
	lastPass, lastOK time.Time
	// waits are the clusters held by the step merged last, with the
	// step and since when this process has seen it held.
	waits map[string]wait
}

type wait struct {
	step  string
	since time.Time
}

// statuses are the plan statuses cairn_reconcile_clusters counts, each
// with a series once a pass has planned.
var statuses = []plan.Status{plan.StatusConverged, plan.StatusPlanned, plan.StatusWaiting, plan.StatusRefused}

// prActions are cairn_reconcile_pull_requests_total's actions.
var prActions = []string{"opened", "updated", "closed", "merged"}

// NewMetrics registers the loop's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cairn_reconcile_pass_duration_seconds",
			Help:    "Duration of the reconcile passes: fetch, observe, plan, publish.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_reconcile_passes_total",
			Help: "Reconcile passes by result: ok, or error (one cluster failed or the pass did)."}, []string{"result"}),
		last: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_reconcile_last_pass_timestamp_seconds",
			Help: "When the last reconcile pass ended, whatever its result, in Unix seconds."}, nil),
		clusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_reconcile_clusters",
			Help: "Clusters by the status of their plan in the last pass that planned: Converged, Planned, Waiting, Refused."}, []string{"status"}),
		prs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_reconcile_pull_requests_total",
			Help: "Pull requests cairn opened, updated, closed (superseded) and merged (auto-merge)."}, []string{"action"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_reconcile_step_waiting_seconds",
			Help: "Seconds the step merged last has waited for its gates in the live state, as of the last pass; only clusters held."}, []string{"cluster"}),
		waits: map[string]wait{},
	}
	for _, c := range []prometheus.Collector{m.duration, m.passes, m.last, m.clusters, m.prs, m.waiting} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("reconcile metrics: %w", err)
		}
	}
	for _, r := range []string{"ok", "error"} {
		m.passes.WithLabelValues(r)
	}
	for _, a := range prActions {
		m.prs.WithLabelValues(a)
	}
	return m, nil
}

// passed records a pass that ran from start to end. held are the
// clusters the step merged last holds, by the step, when the pass got
// as far as planning (planned); a pass that did not keeps the last one's
// clusters and waits.
func (m *Metrics) passed(start, end time.Time, res Result, planned bool, held map[string]string, err error) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.duration.Observe(max(end.Sub(start), 0).Seconds())
	result := "ok"
	if err != nil {
		result = "error"
	} else {
		m.lastOK = end
	}
	m.passes.WithLabelValues(result).Inc()
	m.lastPass = end
	m.last.WithLabelValues().Set(float64(end.UnixNano()) / 1e9)
	m.countPRs(res.Outcomes)
	if !planned {
		return
	}
	count := map[plan.Status]int{}
	for _, p := range res.Plans.Plans {
		count[p.Status]++
	}
	for _, s := range statuses {
		m.clusters.WithLabelValues(string(s)).Set(float64(count[s]))
	}
	for c, w := range m.waits {
		if held[c] != w.step {
			delete(m.waits, c)
			m.waiting.DeleteLabelValues(c)
		}
	}
	for c, step := range held {
		w, ok := m.waits[c]
		if !ok {
			w = wait{step: step, since: end}
			m.waits[c] = w
		}
		m.waiting.WithLabelValues(c).Set(end.Sub(w.since).Seconds())
	}
}

// attempted records the pull requests an attempt at a pass wrote before
// the base branch moved under it: the retry finds them unchanged, so
// they are counted here or not at all.
func (m *Metrics) attempted(res Result) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.countPRs(res.Outcomes)
}

// countPRs counts what outcomes did to pull requests; m.mu is held.
func (m *Metrics) countPRs(outcomes []publish.Outcome) {
	for _, o := range outcomes {
		switch o.Action {
		case publish.ActionOpened, publish.ActionUpdated:
			m.prs.WithLabelValues(string(o.Action)).Inc()
		case publish.ActionAutoMerged:
			m.prs.WithLabelValues("merged").Inc()
		}
		m.prs.WithLabelValues("closed").Add(float64(len(o.Closed)))
	}
}

// ErrNoPassYet: the loop has not finished a pass that succeeded.
var ErrNoPassYet = errors.New("no reconcile pass has succeeded yet")

// Ready reports whether the loop is ready at now: a pass has succeeded,
// and the last pass, whatever its result, ended less than staleAfter
// passes' intervals ago.
func (m *Metrics) Ready(now time.Time, interval time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastOK.IsZero() {
		return ErrNoPassYet
	}
	if age := now.Sub(m.lastPass); age > staleAfter*interval {
		return fmt.Errorf("the last reconcile pass ended %s ago, more than %d intervals of %s", age.Round(time.Second), staleAfter, interval)
	}
	return nil
}

// staleAfter is how many intervals the last pass may be old while the
// loop is ready.
const staleAfter = 3
