package main

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
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
	_, reg, err := newRuntimeAgent(k, agent.Config{Cluster: cluster, Namespace: "db", Identity: "runtime-0"}, client)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// The runtime's metrics are served from its own registry at /metrics.
func TestRuntimeServesMetrics(t *testing.T) {
	reg := runtimeRegistry(t, spec.EtcdKind, "e")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := serveMetrics(l, reg, slog.New(slog.DiscardHandler))
	defer stop()
	resp, err := http.Get("http://" + l.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`cairn_etcd_members{cluster="e",role="voter"}`, `cairn_etcd_quorum{cluster="e"}`, `cairn_etcd_has_leader{cluster="e"}`,
		`cairn_etcd_membership_changes_total{change="promote",cluster="e"}`, `cairn_backup_failures_total{cluster="e"}`,
		`cairn_backup_last_success_timestamp_seconds{cluster="e"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
}

// A runtime of one kind exports its own kind's metrics and the backup
// ones, never another kind's (a PostgreSQL runtime has no
// cairn_etcd_quorum).
func TestRuntimeMetricsOfItsKind(t *testing.T) {
	for _, c := range []struct {
		kind      string
		want      []string
		notPrefix string
	}{
		{spec.EtcdKind, []string{"cairn_etcd_members", "cairn_etcd_quorum", "cairn_etcd_has_leader", "cairn_etcd_membership_changes_total",
			"cairn_backup_failures_total", "cairn_backup_last_success_timestamp_seconds"}, "cairn_postgres_"},
		{spec.PostgresKind, []string{"cairn_postgres_failovers_total", "cairn_postgres_last_failover_seconds",
			"cairn_backup_failures_total", "cairn_backup_last_success_timestamp_seconds"}, "cairn_etcd_"},
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
			}
			for _, w := range c.want {
				if !got[w] {
					t.Errorf("a %s runtime does not export %s (it exports %v)", c.kind, w, got)
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
