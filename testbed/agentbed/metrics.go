package agentbed

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/promtest"
)

// scriptedKeeper is a kind's real keeper, with its real metrics, whose
// passes report a canned observation instead of looking at members.
type scriptedKeeper struct {
	agent.Keeper
	observe func()
}

func (k scriptedKeeper) Pass(context.Context) error { k.observe(); return nil }
func (k scriptedKeeper) ForgetObservations()        { k.Keeper.(agent.Observer).ForgetObservations() }

// Scripted wraps a kind's KeeperFactory: each pass feeds observe the
// keeper it built.
func Scripted(f agent.KeeperFactory, observe func(agent.Keeper)) agent.KeeperFactory {
	return func(c kubernetes.Interface, cfg agent.Config) (agent.Keeper, error) {
		k, err := f(c, cfg)
		if err != nil {
			return nil, err
		}
		return scriptedKeeper{Keeper: k, observe: func() { observe(k) }}, nil
	}
}

// MetricsCase is one kind's runtime for MetricsOfStandbyAndLeader: its
// keeper (Scripted), the series a standby exports and those the leader
// exports besides them (cairn_runtime_leader 1 and the backup gauges
// are added), all of cluster "m".
type MetricsCase struct {
	Kind    string
	Factory agent.KeeperFactory
	Standby map[string]float64
	Leader  map[string]float64
}

// MetricsOfStandbyAndLeader shows that a standby runtime replica exports
// no gauge that looks like a fact: only cairn_runtime_leader 0 and its
// own counters, at 0. The leader exports what it observed, and the last
// backup the status records; once it stops leading, it forgets them.
func MetricsOfStandbyAndLeader(t *testing.T, c MetricsCase) {
	cp := testbed.Start(t)
	kube := cp.Client(t)
	finished := time.Date(2026, 3, 1, 2, 0, 30, 0, time.UTC)
	backupLabels := `{cluster="m"}`
	ns := cp.Namespace(t, "metrics-"+strings.ToLower(strings.TrimSuffix(c.Kind, "Cluster")))
	WriteBackupStatus(t, kube, ns, "m", agent.BackupStatus{LastSuccessful: &agent.BackupDone{ID: "b1", Started: finished.Add(-30 * time.Second), Finished: finished, Size: 4096}})
	start := func(ctx context.Context, id string) (*prometheus.Registry, chan error) {
		reg := prometheus.NewRegistry()
		a, err := agent.New(agent.Config{Cluster: "m", Namespace: ns, Identity: id, Kind: c.Kind, Interval: 50 * time.Millisecond,
			Metrics: reg, Log: testbed.Logger(t, slog.LevelInfo).With("runtime", id)}, kube, c.Factory)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		return reg, done
	}
	standby := maps.Clone(c.Standby)
	standby[fmt.Sprintf(`cairn_runtime_leader{cluster="m",kind=%q}`, c.Kind)] = 0
	standby[`cairn_backup_failures_total`+backupLabels] = 0
	want := maps.Clone(standby)
	maps.Copy(want, c.Leader)
	want[fmt.Sprintf(`cairn_runtime_leader{cluster="m",kind=%q}`, c.Kind)] = 1
	want[`cairn_backup_last_success_timestamp_seconds`+backupLabels] = float64(finished.Unix())
	want[`cairn_backup_duration_seconds`+backupLabels] = 30
	want[`cairn_backup_bytes`+backupLabels] = 4096

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leader, leaderDone := start(ctx, "runtime-0")
	waitSeries(t, leader, want, "the leader")
	standbyCtx, stopStandby := context.WithCancel(context.Background())
	defer stopStandby()
	other, standbyDone := start(standbyCtx, "runtime-1")
	time.Sleep(300 * time.Millisecond) // its first try at the Lease, and passes it would make
	sameSeries(t, promtest.Series(t, other), standby, "a standby")

	cancel()
	if err := <-leaderDone; err != nil {
		t.Fatal(err)
	}
	sameSeries(t, promtest.Series(t, leader), standby, "a runtime that stopped leading")
	stopStandby()
	<-standbyDone
}

// waitSeries waits up to 20s for reg to export exactly want.
func waitSeries(t *testing.T, reg prometheus.Gatherer, want map[string]float64, who string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !maps.Equal(promtest.Series(t, reg), want) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	sameSeries(t, promtest.Series(t, reg), want, who)
}

func sameSeries(t *testing.T, got, want map[string]float64, who string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := got[k]; !ok || v != want[k] {
			t.Errorf("%s: %s = %v (exported %v), want %v", who, k, v, ok, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s exports %s = %v, which it should not", who, k, got[k])
		}
	}
}
