package reconcile

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// GitHubMetrics are the GitHub provider's metrics, registered only when
// the loop publishes to GitHub:
//
//	cairn_reconcile_github_requests_total  HTTP requests made to the GitHub API
//	cairn_reconcile_github_rate_remaining  X-RateLimit-Remaining of the last answer that had one
//
// rate_remaining has no series before GitHub has answered with the
// header.
type GitHubMetrics struct {
	requests prometheus.Counter
	// remaining is a vector so that it has no series before the first
	// answer.
	remaining *prometheus.GaugeVec
}

// NewGitHubMetrics registers the GitHub provider's metrics with reg.
func NewGitHubMetrics(reg prometheus.Registerer) (*GitHubMetrics, error) {
	m := &GitHubMetrics{
		requests: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_reconcile_github_requests_total",
			Help: "HTTP requests cairn made to the GitHub API, answered or not (conditional GETs answered 304 included)."}),
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_reconcile_github_rate_remaining",
			Help: "Requests left in GitHub's primary rate limit window: X-RateLimit-Remaining of the last answer that had one."}, nil),
	}
	for _, c := range []prometheus.Collector{m.requests, m.remaining} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("github metrics: %w", err)
		}
	}
	return m, nil
}

// Observe records one request to the GitHub API: its answer, or nil
// with the error when none came (githubpr.Provider.Observe calls it).
func (m *GitHubMetrics) Observe(resp *http.Response, _ error) {
	if m == nil {
		return
	}
	m.requests.Inc()
	if resp == nil {
		return
	}
	if n, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Remaining"), 10, 64); err == nil && n >= 0 {
		m.remaining.WithLabelValues().Set(float64(n))
	}
}
