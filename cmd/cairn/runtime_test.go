package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/runtime/agent"
)

// The runtime's metrics are served from its own registry at /metrics.
func TestRuntimeServesMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := agent.NewMetrics(reg, "e"); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.NewBackupMetrics(reg, "e"); err != nil {
		t.Fatal(err)
	}
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
