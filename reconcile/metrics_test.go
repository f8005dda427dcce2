package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed/gitbed"
	"github.com/cairn-dev/cairn/testbed/promtest"
)

// fakeClock is a clock a test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func metricsLoop(t *testing.T, f *fakes, files map[string]string) (*Loop, string, *prometheus.Registry, *fakeClock) {
	t.Helper()
	l, bare := newTestLoop(t, f, true, files)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l.cfg.Metrics, l.cfg.Now = m, clock.Now
	return l, bare, reg, clock
}

// Each pass is counted by result, its plans by status, the pull requests
// cairn opened and closed by action, and a cluster held by its merged
// step for as long as it is held. Before the first pass, no gauge looks
// like a fact.
func TestMetricsOfPasses(t *testing.T) {
	f := &fakes{next: []string{"s1", "s2"}, fp: "f1"}
	other := strings.Replace(kvSpec, "name: kv", "name: ok", 1)
	l, bare, reg, clock := metricsLoop(t, f, map[string]string{"clusters/kv.yaml": kvSpec, "clusters/ok.yaml": other})
	counters := func(ok, failed, opened, closed float64) map[string]float64 {
		return map[string]float64{
			`cairn_reconcile_passes_total{result="ok"}`: ok, `cairn_reconcile_passes_total{result="error"}`: failed,
			`cairn_reconcile_pull_requests_total{action="opened"}`: opened, `cairn_reconcile_pull_requests_total{action="updated"}`: 0,
			`cairn_reconcile_pull_requests_total{action="closed"}`: closed, `cairn_reconcile_pull_requests_total{action="merged"}`: 0,
		}
	}
	planned := func(at time.Time, passes float64, statuses map[string]float64) map[string]float64 {
		out := map[string]float64{`cairn_reconcile_pass_duration_seconds{}`: passes, `cairn_reconcile_last_pass_timestamp_seconds{}`: float64(at.Unix())}
		for _, s := range []string{"Converged", "Planned", "Waiting", "Refused"} {
			out[fmt.Sprintf("cairn_reconcile_clusters{status=%q}", s)] = statuses[s]
		}
		return out
	}
	t0 := clock.now
	steps := []struct {
		name   string
		before func()
		want   map[string]float64
	}{
		{"before any pass", nil, union(counters(0, 0, 0, 0), map[string]float64{`cairn_reconcile_pass_duration_seconds{}`: 0})},
		{"the first pass opens both clusters' steps", func() {}, union(counters(1, 0, 2, 0), planned(t0, 1, map[string]float64{"Planned": 2}))},
		// kv waits; ok's new plan opens s2 and closes s1.
		{"a merged step waits for its gates", func() {
			gitbed.Merge(t, bare, "cairn/kv/s1")
			f.next = []string{"s2"}
			clock.now = t0.Add(time.Minute)
		}, union(counters(2, 0, 3, 1), planned(t0.Add(time.Minute), 2, map[string]float64{"Planned": 2}),
			map[string]float64{`cairn_reconcile_step_waiting_seconds{cluster="kv"}`: 0})},
		{"and waits on", func() { clock.now = t0.Add(4 * time.Minute) },
			union(counters(3, 0, 3, 1), planned(t0.Add(4*time.Minute), 3, map[string]float64{"Planned": 2}),
				map[string]float64{`cairn_reconcile_step_waiting_seconds{cluster="kv"}`: 180})},
		{"a cluster that fails makes the pass fail; kv waits on", func() {
			f.failRender = "ok"
			f.next = []string{"s2", "s3"}
			clock.now = t0.Add(5 * time.Minute)
		}, union(counters(3, 1, 3, 1), planned(t0.Add(5*time.Minute), 4, map[string]float64{"Planned": 2}),
			map[string]float64{`cairn_reconcile_step_waiting_seconds{cluster="kv"}`: 240})},
		{"once the step shows done, the next opens and nothing waits", func() {
			f.failRender, f.afterPass, f.next = "", true, []string{"s2"}
			clock.now = t0.Add(6 * time.Minute)
		}, union(counters(4, 1, 4, 1), planned(t0.Add(6*time.Minute), 5, map[string]float64{"Planned": 2}))},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
			_, _ = l.Pass(context.Background())
		}
		got := promtest.Series(t, reg)
		if !maps.Equal(got, s.want) {
			t.Errorf("%s:\n got %v\nwant %v", s.name, sorted(got), sorted(s.want))
		}
	}
}

func union(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

func sorted(m map[string]float64) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return out
}

// The end of Run's context is a clean stop: the pass it interrupts is
// neither reported, nor counted, and what its cut-short calls log as
// failures is dropped.
func TestRunStopsCleanlyWhenCancelled(t *testing.T) {
	for _, c := range []struct {
		name string
		cut  func(l *Loop, cancel func())
	}{
		{"while it observes", func(l *Loop, cancel func()) {
			l.cfg.Observe = func(ctx context.Context, _ []spec.Cluster) (*live.Snapshot, error) {
				cancel()
				return nil, ctx.Err()
			}
		}},
		{"while it publishes", func(l *Loop, cancel func()) {
			l.pub.Render = func(spec.Cluster, plan.Plan, string) (renderer.Tree, renderer.Built, error) {
				cancel()
				return nil, renderer.Built{}, context.Canceled
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakes{next: []string{"s1"}, fp: "f1"}
			var logs bytes.Buffer
			l, _, reg, _ := metricsLoop(t, f, map[string]string{"clusters/kv.yaml": kvSpec})
			l.cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
			*l = *New(l.cfg)
			ctx, cancel := context.WithCancel(context.Background())
			c.cut(l, cancel)
			reported := false
			if err := l.Run(ctx, time.Hour, nil, func([]publish.Outcome) { reported = true }); err != nil {
				t.Fatalf("Run returned %v, want nil", err)
			}
			if reported || logs.Len() > 0 {
				t.Errorf("reported %v, logged %q; want neither", reported, logs.String())
			}
			if got := promtest.Series(t, reg); got[`cairn_reconcile_passes_total{result="ok"}`]+got[`cairn_reconcile_passes_total{result="error"}`] != 0 {
				t.Errorf("the interrupted pass was counted: %v", sorted(got))
			}
		})
	}
}

// Ready: after a pass succeeded, while the last pass is recent.
func TestMetricsReady(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fail := errors.New("fetch: unreachable")
	for _, c := range []struct {
		name   string
		passes []error // one a minute from t0
		at     time.Duration
		ready  bool
	}{
		{"no pass yet", nil, 0, false},
		{"only failed passes", []error{fail, fail}, 2 * time.Minute, false},
		{"a pass succeeded", []error{nil}, time.Minute, true},
		{"a failed pass after one that succeeded", []error{nil, fail}, 2 * time.Minute, true},
		{"the last pass three intervals old", []error{nil}, 4 * time.Minute, true},
		{"the last pass older", []error{nil}, 4*time.Minute + time.Second, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			for i, err := range c.passes {
				end := t0.Add(time.Duration(i+1) * time.Minute)
				m.passed(end.Add(-time.Second), end, Result{}, err == nil, nil, err)
			}
			if err := m.Ready(t0.Add(c.at), time.Minute); (err == nil) != c.ready {
				t.Errorf("Ready: %v, want ready %v", err, c.ready)
			}
		})
	}
}

// The handler answers /healthz always, /readyz once ready, and /metrics
// with the gatherer's families.
func TestMetricsHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(m.Handler(reg, time.Minute, func() time.Time { return now }))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	check := func(path string, code int, contains string) {
		t.Helper()
		if got, body := get(path); got != code || !strings.Contains(body, contains) {
			t.Errorf("GET %s: %d %q, want %d containing %q", path, got, body, code, contains)
		}
	}
	check("/healthz", 200, "ok")
	check("/readyz", 503, ErrNoPassYet.Error())
	m.passed(now.Add(-time.Second), now, Result{}, true, nil, nil)
	check("/readyz", 200, "ok")
	check("/metrics", 200, `cairn_reconcile_passes_total{result="ok"} 1`)
	check("/nothing", 404, "")
}

// The GitHub metrics count every request and keep the rate budget the
// last answer that had one reported.
func TestGitHubMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewGitHubMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(remaining string) *http.Response {
		h := http.Header{}
		if remaining != "" {
			h.Set("X-RateLimit-Remaining", remaining)
		}
		return &http.Response{StatusCode: 200, Header: h}
	}
	for _, c := range []struct {
		name      string
		resp      *http.Response
		err       error
		remaining float64 // -1: no series
	}{
		{"an answer without the header", answer(""), nil, -1},
		{"an answer with it", answer("4999"), nil, 4999},
		{"no answer", nil, errors.New("connection refused"), 4999},
		{"a malformed header", answer("many"), nil, 4999},
		{"the next answer", answer("4998"), nil, 4998},
	} {
		m.Observe(c.resp, c.err)
		got := promtest.Series(t, reg)
		v, ok := got[`cairn_reconcile_github_rate_remaining{}`]
		if (c.remaining < 0) == ok || (ok && v != c.remaining) {
			t.Errorf("%s: rate remaining %v (exported %v), want %v", c.name, v, ok, c.remaining)
		}
	}
	if got := promtest.Series(t, reg)[`cairn_reconcile_github_requests_total{}`]; got != 5 {
		t.Errorf("requests %v, want 5", got)
	}
}

// A pass whose push is rejected because the base moved while it published
// (another publisher made the branch on the new base) plans again; the
// pull requests the first attempt opened are counted, though the retry
// finds them unchanged.
func TestMetricsCountWhatARetriedPassWrote(t *testing.T) {
	f := &fakes{next: []string{"s1"}, fp: "f1"}
	other := strings.Replace(kvSpec, "name: kv", "name: ok", 1)
	l, bare, reg, _ := metricsLoop(t, f, map[string]string{"clusters/kv.yaml": kvSpec, "clusters/ok.yaml": other})
	moved := false
	f.onRender = func(cluster string) {
		if cluster == "ok" && !moved {
			moved = true // after kv's pull request opened
			gitbed.Commit(t, bare, map[string]string{"README.md": "a commit while cairn publishes\n"})
			gitbed.Branch(t, bare, publish.Branch("ok", "s1"), "main")
		}
	}
	res, err := l.Pass(context.Background())
	if err != nil || !moved {
		t.Fatalf("pass: %v (base moved: %v)", err, moved)
	}
	for _, o := range res.Outcomes {
		if strings.HasSuffix(o.Cluster, "/kv") && o.Action != publish.ActionUnchanged {
			t.Fatalf("the retry should find kv's pull request unchanged: %+v", o)
		}
	}
	got := promtest.Series(t, reg)
	if got[`cairn_reconcile_pull_requests_total{action="opened"}`] != 2 {
		t.Fatalf("opened counted %v, want 2 (kv in the first attempt, ok in the retry)", got)
	}
}
