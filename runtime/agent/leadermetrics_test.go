package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/promtest"
)

// scriptedKeeper is a kind's real keeper, with its real metrics, whose
// passes report a canned observation instead of looking at members.
type scriptedKeeper struct {
	Keeper
	observe func()
}

func (k scriptedKeeper) Pass(context.Context) error { k.observe(); return nil }
func (k scriptedKeeper) forgetObservations()        { k.Keeper.(observer).forgetObservations() }

// scripted wraps a kind's KeeperFactory: each pass feeds observe the
// keeper it built.
func scripted(f KeeperFactory, observe func(Keeper)) KeeperFactory {
	return func(c kubernetes.Interface, cfg Config) (Keeper, error) {
		k, err := f(c, cfg)
		if err != nil {
			return nil, err
		}
		return scriptedKeeper{Keeper: k, observe: func() { observe(k) }}, nil
	}
}

// A standby runtime replica exports no gauge that looks like a fact: only
// cairn_runtime_leader 0 and its own counters, at 0. The leader exports
// what it observed, and the last backup the status records; once it stops
// leading, it forgets them.
func TestMetricsOfStandbyAndLeader(t *testing.T) {
	cp := testbed.Start(t)
	kube := cp.Client(t)
	finished := time.Date(2026, 3, 1, 2, 0, 30, 0, time.UTC)
	etcdPass := func(k Keeper) {
		k.(*Membership).Metrics.observe(etcdStatus{Quorum: true, Members: []contract.EtcdMember{
			{Name: "m-0", Leader: true, Healthy: true}, {Name: "m-1", Healthy: true}, {Name: "m-2", Learner: true}}}, action{}, false)
		k.(*Membership).Metrics.observeMaint(contract.EtcdMaintenanceStatus{
			Members: []contract.EtcdMemberSpace{{Name: "m-0", DBSize: 100, DBSizeInUse: 50}},
			Alarms:  []contract.EtcdAlarm{{Member: "m-0", ID: "1", Alarm: contract.EtcdAlarmNoSpace}}}, 2<<30, maintAction{}, maintResult{})
	}
	pgPass := func(k Keeper) {
		primary := pgMember{Name: "m-0", Probe: pgProbe{Reach: reachUp, Received: 300, Replayed: 300}}
		replica := pgMember{Name: "m-1", Probe: pgProbe{Reach: reachUp, InRecovery: true, Received: 200, Replayed: 100}}
		k.(*Roles).Metrics.observe([]pgMember{primary, replica}, []pgMember{primary})
	}
	backupLabels := `{cluster="m"}`
	for _, c := range []struct {
		kind    string
		factory KeeperFactory
		standby map[string]float64
		leader  map[string]float64 // besides standby's, cairn_runtime_leader 1
	}{
		{spec.EtcdKind, scripted(Etcd, etcdPass), map[string]float64{
			`cairn_runtime_leader{cluster="m",kind="EtcdCluster"}`:                  0,
			`cairn_etcd_membership_changes_total{change="promote",cluster="m"}`:     0,
			`cairn_etcd_membership_changes_total{change="remove",cluster="m"}`:      0,
			`cairn_etcd_membership_changes_total{change="replace",cluster="m"}`:     0,
			`cairn_etcd_membership_changes_total{change="move-leader",cluster="m"}`: 0,
			`cairn_etcd_maintenance_total{action="compact",cluster="m"}`:            0,
			`cairn_etcd_maintenance_total{action="defrag",cluster="m"}`:             0,
			`cairn_etcd_maintenance_total{action="disarm",cluster="m"}`:             0,
			`cairn_backup_failures_total` + backupLabels:                            0,
		}, map[string]float64{
			`cairn_etcd_members{cluster="m",role="voter"}`:              2,
			`cairn_etcd_members{cluster="m",role="learner"}`:            1,
			`cairn_etcd_quorum{cluster="m"}`:                            1,
			`cairn_etcd_has_leader{cluster="m"}`:                        1,
			`cairn_etcd_alarms{alarm="NOSPACE",cluster="m"}`:            1,
			`cairn_etcd_alarms{alarm="CORRUPT",cluster="m"}`:            0,
			`cairn_etcd_db_size_bytes{cluster="m",member="m-0"}`:        100,
			`cairn_etcd_db_size_in_use_bytes{cluster="m",member="m-0"}`: 50,
			`cairn_etcd_space_quota_bytes{cluster="m"}`:                 2 << 30,
		}},
		{spec.PostgresKind, scripted(Postgres, pgPass), map[string]float64{
			`cairn_runtime_leader{cluster="m",kind="PostgresCluster"}`: 0,
			`cairn_postgres_failovers_total{cluster="m"}`:              0,
			`cairn_backup_failures_total` + backupLabels:               0,
		}, map[string]float64{
			`cairn_postgres_primary{cluster="m",member="m-0"}`:           1,
			`cairn_postgres_primary{cluster="m",member="m-1"}`:           0,
			`cairn_postgres_replica_lag_bytes{cluster="m",member="m-1"}`: 200,
		}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			ns := cp.Namespace(t, "metrics-"+strings.ToLower(strings.TrimSuffix(c.kind, "Cluster")))
			st, _ := json.Marshal(BackupStatus{LastSuccessful: &BackupDone{ID: "b1", Started: finished.Add(-30 * time.Second), Finished: finished, Size: 4096}})
			if _, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: contract.StatusConfigMap("m"), Namespace: ns},
				Data:       map[string]string{contract.StatusKeyBackup: string(st)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			start := func(ctx context.Context, id string) (*prometheus.Registry, chan error) {
				reg := prometheus.NewRegistry()
				a, err := New(Config{Cluster: "m", Namespace: ns, Identity: id, Kind: c.kind, Interval: 50 * time.Millisecond,
					Metrics: reg, Log: slog.New(slog.NewTextHandler(logWriter{t}, nil)).With("runtime", id)}, kube, c.factory)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- a.Run(ctx) }()
				return reg, done
			}
			leaderName := fmt.Sprintf(`cairn_runtime_leader{cluster="m",kind=%q}`, c.kind)
			want := maps.Clone(c.standby)
			maps.Copy(want, c.leader)
			want[leaderName] = 1
			want[`cairn_backup_last_success_timestamp_seconds`+backupLabels] = float64(finished.Unix())
			want[`cairn_backup_duration_seconds`+backupLabels] = 30
			want[`cairn_backup_bytes`+backupLabels] = 4096

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			leader, leaderDone := start(ctx, "runtime-0")
			waitSeries(t, leader, want, "the leader")
			standbyCtx, stopStandby := context.WithCancel(context.Background())
			defer stopStandby()
			standby, standbyDone := start(standbyCtx, "runtime-1")
			time.Sleep(300 * time.Millisecond) // its first try at the Lease, and passes it would make
			sameSeries(t, promtest.Series(t, standby), c.standby, "a standby")

			cancel()
			if err := <-leaderDone; err != nil {
				t.Fatal(err)
			}
			sameSeries(t, promtest.Series(t, leader), c.standby, "a runtime that stopped leading")
			stopStandby()
			<-standbyDone
		})
	}
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
