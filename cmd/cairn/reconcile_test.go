package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

func outcomeOf(t *testing.T, out []publish.Outcome, cluster string) publish.Outcome {
	t.Helper()
	for _, o := range out {
		if o.Cluster == cluster {
			return o
		}
	}
	t.Fatalf("no outcome for %s in %+v", cluster, out)
	return publish.Outcome{}
}

func TestReconcileHoldsUntilTheMergedStepShowsDone(t *testing.T) {
	ctx := context.Background()
	bare := gitbed.New(t, exampleFiles(t))
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	base, _ := os.ReadFile("../../examples/fleet/live.yaml")
	setLive := func(s string) { _ = os.WriteFile(liveFile, []byte(s), 0o644) }
	setLive(string(base))
	r, cleanup, err := newReconciler(ctx, remoteOptions{repo: bare, base: "main"}, githubOptions{}, liveSource{file: liveFile}, specsFlag{dir: "clusters"}, renderer.Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	etcdOf := func() publish.Outcome {
		out, err := r.pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return outcomeOf(t, out, "EtcdCluster/my-etcd-cluster")
	}
	if o := etcdOf(); o.Action != publish.ActionOpened || o.Step != "etcd-add-1" {
		t.Fatalf("first pass: %+v", o)
	}
	gitbed.Merge(t, bare, "cairn/my-etcd-cluster/etcd-add-1")
	if o := etcdOf(); o.Action != publish.ActionHeld || !strings.Contains(o.Note, "waiting for merged step etcd-add-1") {
		t.Fatalf("after merge: %+v", o)
	}
	// The pod exists but is not ready: still held, whatever the planner says.
	joined := mustReplace(t, string(base), "statefulSet: {readOnlyRootFilesystem: true, replicas: 1,", "statefulSet: {readOnlyRootFilesystem: true, replicas: 2,")
	joined = mustReplace(t, joined, "role: leader, tls: true, peerTLS: true}\n", "role: leader, tls: true, peerTLS: true}\n      - {name: my-etcd-cluster-1, version: \"3.2.13\", ready: false, role: follower}\n")
	setLive(joined)
	if o := etcdOf(); o.Action != publish.ActionHeld || !strings.Contains(o.Note, "my-etcd-cluster-1 is ready") {
		t.Fatalf("member not ready: %+v", o)
	}
	// Ready and voting: the gates pass and the next step's pull request opens.
	setLive(mustReplace(t, joined, "ready: false", "ready: true"))
	if o := etcdOf(); o.Action != publish.ActionOpened || o.Step != "etcd-add-2" {
		t.Fatalf("after the step showed done: %+v", o)
	}
}

// Each pass prints only what changed since the pass before, every line
// stamped with the time.
func TestReconcilePrintsOnlyChanges(t *testing.T) {
	opened := publish.Outcome{Cluster: "EtcdCluster/kv", Status: plan.StatusPlanned, Step: "s1", Branch: "cairn/kv/s1", Action: publish.ActionOpened}
	unchanged := opened
	unchanged.Action = publish.ActionUnchanged
	held := publish.Outcome{Cluster: "EtcdCluster/kv", Status: plan.StatusPlanned, Action: publish.ActionHeld, Note: "waiting for merged step s1: kv-3 is ready"}
	heldOther := held
	heldOther.Note = "waiting for merged step s1: kv-3 is a voter"
	converged := publish.Outcome{Cluster: "PostgresCluster/db", Status: plan.StatusConverged, Action: publish.ActionNone, Note: "converged"}
	next := publish.Outcome{Cluster: "EtcdCluster/kv", Status: plan.StatusPlanned, Step: "s2", Branch: "cairn/kv/s2", Action: publish.ActionOpened, Closed: []string{"cairn/kv/x"}}
	p := &changePrinter{now: func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }}
	for _, c := range []struct {
		name string
		pass []publish.Outcome
		want []string // fields of each line but the time
	}{
		{"the first pass prints every cluster", []publish.Outcome{opened, converged},
			[]string{"TIME CLUSTER STATUS STEP PULL REQUEST NOTE", "EtcdCluster/kv Planned s1 opened", "PostgresCluster/db Converged - none converged"}},
		{"nothing changed", []publish.Outcome{unchanged, converged}, nil},
		{"still nothing", []publish.Outcome{unchanged, converged}, nil},
		{"held", []publish.Outcome{held, converged}, []string{"EtcdCluster/kv Planned - held waiting for merged step s1: kv-3 is ready"}},
		{"held the same", []publish.Outcome{held, converged}, nil},
		{"held for another reason", []publish.Outcome{heldOther, converged}, []string{"EtcdCluster/kv Planned - held waiting for merged step s1: kv-3 is a voter"}},
		{"the next step, another closed", []publish.Outcome{next, converged}, []string{"EtcdCluster/kv Planned s2 opened closed [cairn/kv/x]"}},
		{"a cluster gone", []publish.Outcome{unchanged}, []string{"EtcdCluster/kv Planned s1 unchanged", "PostgresCluster/db - - - no longer planned: no spec and nothing running"}},
	} {
		var out bytes.Buffer
		p.w = &out
		p.print(c.pass)
		var got []string
		for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			f := strings.Fields(line)
			if f[0] != "TIME" {
				if f[0] != "2026-03-01T12:00:00Z" {
					t.Errorf("%s: %q is not stamped with the time", c.name, line)
				}
				f = f[1:]
			}
			got = append(got, strings.Join(f, " "))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: printed\n%s\nwant %q", c.name, out.String(), c.want)
		}
	}
}

// With a registry, cairn reconcile's passes are counted, the process
// exports its build and Go metrics, /readyz answers once a pass
// succeeded; the GitHub provider's requests and rate budget are counted.
func TestReconcileMetrics(t *testing.T) {
	ctx := context.Background()
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	base, _ := os.ReadFile("../../examples/fleet/live.yaml")
	_ = os.WriteFile(liveFile, base, 0o644)
	for _, c := range []struct {
		name   string
		github bool
	}{{"the local provider", false}, {"GitHub", true}} {
		t.Run(c.name, func(t *testing.T) {
			bare := gitbed.New(t, exampleFiles(t))
			var gh githubOptions
			var srv *githubtest.Server
			if c.github {
				srv = githubtest.New(t)
				srv.UseRepo(bare)
				tokenFile := filepath.Join(t.TempDir(), "gh")
				_ = os.WriteFile(tokenFile, []byte(srv.Token), 0o600)
				gh = githubOptions{repo: "org/gitops", api: srv.URL + "/", tokenFile: tokenFile}
			}
			reg, err := newProcessRegistry()
			if err != nil {
				t.Fatal(err)
			}
			r, cleanup, err := newReconcilerWith(ctx, remoteOptions{repo: bare, base: "main"}, gh, liveSource{file: liveFile}, specsFlag{dir: "clusters"},
				renderer.Options{}, slog.New(slog.DiscardHandler), reg)
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			h := r.metrics.Handler(reg, time.Minute, nil)
			get := func(path string) (int, string) {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				return rec.Code, rec.Body.String()
			}
			if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
				t.Errorf("/readyz before a pass: %d, want 503", code)
			}
			if _, err := r.pass(ctx); err != nil {
				t.Fatal(err)
			}
			if code, _ := get("/readyz"); code != http.StatusOK {
				t.Errorf("/readyz after a pass: %d, want 200", code)
			}
			_, body := get("/metrics")
			want := []string{`cairn_reconcile_passes_total{result="ok"} 1`, `cairn_reconcile_clusters{status="Planned"} 2`,
				`cairn_reconcile_pull_requests_total{action="opened"} 2`, "cairn_reconcile_pass_duration_seconds_count 1",
				"cairn_reconcile_last_pass_timestamp_seconds ", "cairn_build_info{", "go_goroutines ", "process_start_time_seconds "}
			if c.github {
				calls := 0
				for _, n := range srv.Calls {
					calls += n
				}
				want = append(want, fmt.Sprintf("cairn_reconcile_github_requests_total %d\n", calls))
			} else if strings.Contains(body, "cairn_reconcile_github_") {
				t.Error("the local provider exports GitHub metrics")
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("no %q in\n%s", w, body)
				}
			}
		})
	}
}

// cairn reconcile stops cleanly when its context ends (SIGINT, SIGTERM):
// no error, nothing logged at ERROR.
func TestReconcileStopsCleanly(t *testing.T) {
	bare := gitbed.New(t, exampleFiles(t))
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	base, _ := os.ReadFile("../../examples/fleet/live.yaml")
	_ = os.WriteFile(liveFile, base, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	stdout := cancelOnWrite{cancel: cancel}
	root := newRoot(&stdout, &stderr)
	root.SetArgs([]string{"reconcile", "--repo", bare, "--live", liveFile, "--interval", "50ms", "--metrics-addr", "127.0.0.1:0"})
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("reconcile returned %v, want nil", err)
	}
	if strings.Contains(stderr.String(), "ERROR") || !strings.Contains(stdout.String(), "EtcdCluster/my-etcd-cluster") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

// cancelOnWrite cancels its context once written to: a person pressing
// Ctrl-C once the first pass has printed.
type cancelOnWrite struct {
	bytes.Buffer
	cancel func()
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	defer w.cancel()
	return w.Buffer.Write(p)
}
