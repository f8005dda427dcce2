package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/version"
)

// runtimeRegistry builds the runtime `cairn runtime --kind name
// --cluster cluster` runs (building it calls no server) and returns the
// registry its metrics are served from.
func runtimeRegistry(t *testing.T, name, cluster string) *prometheus.Registry {
	t.Helper()
	k, err := runtimeKind(name)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, reg, err := newRuntimeAgent(k, k.runtime(), agent.Config{Cluster: cluster, Namespace: "db", Identity: "runtime-0"}, client)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// The runtime's metrics are served from its own registry at /metrics,
// with the build's and the process's.
func TestRuntimeServesMetrics(t *testing.T) {
	reg := runtimeRegistry(t, spec.EtcdKind, "e")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := serveHTTP(l, metricsHandler(reg), slog.New(slog.DiscardHandler))
	defer stop()
	resp, err := http.Get("http://" + l.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	v := version.Get()
	for _, want := range []string{`cairn_runtime_leader{cluster="e",kind="EtcdCluster"} 0`,
		`cairn_etcd_membership_changes_total{change="promote",cluster="e"} 0`, `cairn_backup_failures_total{cluster="e"} 0`,
		fmt.Sprintf(`cairn_build_info{goversion=%q,release=%q,revision=%q} 1`, v.GoVersion, v.Release, v.Revision),
		"go_goroutines ", "process_start_time_seconds "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
}

// A runtime of one kind exports its own kind's metrics, the backup ones,
// cairn_runtime_leader and the process's, never another kind's (a
// PostgreSQL runtime has no cairn_etcd_quorum). Before it leads it
// exports no gauge that looks like a fact: no quorum, no last backup at 0
// (runtime/agent's TestMetricsOfStandbyAndLeader runs the leader).
func TestRuntimeMetricsOfItsKind(t *testing.T) {
	process := []string{"cairn_build_info", "cairn_runtime_leader", "go_goroutines", "go_memstats_alloc_bytes", "process_start_time_seconds",
		"cairn_backup_failures_total"}
	leaderOnly := []string{"cairn_backup_last_success_timestamp_seconds", "cairn_backup_duration_seconds", "cairn_backup_bytes",
		"cairn_backup_last_failure_timestamp_seconds", "cairn_backup_due_timestamp_seconds"}
	for _, c := range []struct {
		kind       string
		want       []string
		leaderOnly []string
		notPrefix  string
	}{
		{spec.EtcdKind, []string{"cairn_etcd_membership_changes_total", "cairn_etcd_maintenance_total"},
			[]string{"cairn_etcd_members", "cairn_etcd_quorum", "cairn_etcd_has_leader", "cairn_etcd_alarms", "cairn_etcd_db_size_bytes",
				"cairn_etcd_db_size_in_use_bytes", "cairn_etcd_space_quota_bytes"}, "cairn_postgres_"},
		{spec.PostgresKind, []string{"cairn_postgres_failovers_total"},
			[]string{"cairn_postgres_last_failover_seconds", "cairn_postgres_primary", "cairn_postgres_replica_lag_bytes",
				"cairn_postgres_certificate_expiry_timestamp_seconds", "cairn_postgres_replica_streaming", "cairn_postgres_wal_bound_bytes"}, "cairn_etcd_"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			families, err := runtimeRegistry(t, c.kind, "c").Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, f := range families {
				got[f.GetName()] = true
				if strings.HasPrefix(f.GetName(), c.notPrefix) {
					t.Errorf("a %s runtime exports %s", c.kind, f.GetName())
				}
				if strings.HasPrefix(f.GetName(), "cairn_") && !slices.Contains(append(c.want, process...), f.GetName()) {
					t.Errorf("a %s runtime that does not lead exports %s", c.kind, f.GetName())
				}
			}
			for _, w := range append(c.want, process...) {
				if !got[w] {
					t.Errorf("a %s runtime does not export %s (it exports %v)", c.kind, w, got)
				}
			}
			for _, n := range append(c.leaderOnly, leaderOnly...) {
				if got[n] {
					t.Errorf("a %s runtime that does not lead exports %s", c.kind, n)
				}
			}
		})
	}
}

// An unknown --kind is a usage error that names the kinds there are.
func TestRuntimeUnknownKind(t *testing.T) {
	_, err := runtimeKind("RedisCluster")
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != exitUsage {
		t.Fatalf("got %v, want a usage error", err)
	}
	for _, want := range []string{spec.EtcdKind, spec.PostgresKind, "RedisCluster"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
}
