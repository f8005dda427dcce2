package postgres

import (
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/testbed/agentbed"
	"github.com/cairn-dev/cairn/testbed/promtest"
)

// A PostgreSQL runtime's standby exports its counters only; its leader
// what it observed (agentbed.MetricsOfStandbyAndLeader).
func TestMetricsOfStandbyAndLeader(t *testing.T) {
	pass := func(k agent.Keeper) {
		primary := pgMember{Name: "m-0", Probe: pgProbe{Reach: reachUp, Received: 300, Replayed: 300}}
		replica := pgMember{Name: "m-1", Probe: pgProbe{Reach: reachUp, InRecovery: true, Streaming: true, Received: 200, Replayed: 100}}
		k.(*Roles).Metrics.observe([]pgMember{primary, replica}, []pgMember{primary})
	}
	agentbed.MetricsOfStandbyAndLeader(t, agentbed.MetricsCase{Kind: spec.PostgresKind, Factory: agentbed.Scripted(Config{}.Keeper, pass),
		Standby: map[string]float64{
			`cairn_postgres_failovers_total{cluster="m"}`: 0,
		}, Leader: map[string]float64{
			`cairn_postgres_primary{cluster="m",member="m-0"}`:           1,
			`cairn_postgres_primary{cluster="m",member="m-1"}`:           0,
			`cairn_postgres_replica_lag_bytes{cluster="m",member="m-1"}`: 200,
			`cairn_postgres_replica_streaming{cluster="m",member="m-1"}`: 1,
		}})
}

// The gauges the alerts on a replica that does not stream and on a
// pg_wal past its bound read: which members have a series and what it
// says.
func TestMetricsStreamingAndWALBound(t *testing.T) {
	primary := pgMember{Name: "m-0", Probe: pgProbe{Reach: reachUp, Received: 300, Replayed: 300,
		Archive: archiveStats{On: true, Pending: 2, WALBytes: 5 << 30, WALBound: 1536 << 20}}}
	streaming := pgMember{Name: "m-1", Probe: pgProbe{Reach: reachUp, InRecovery: true, Streaming: true, Receiving: true, Received: 300, Replayed: 300}}
	connecting := pgMember{Name: "m-2", Probe: pgProbe{Reach: reachUp, InRecovery: true, Receiving: true, Received: 100, Replayed: 100}}
	down := pgMember{Name: "m-3", Probe: pgProbe{Reach: reachDown}}
	second := pgMember{Name: "m-4", Probe: pgProbe{Reach: reachUp}}
	for _, c := range []struct {
		name               string
		members, primaries []pgMember
		want               map[string]float64
	}{
		{"one primary: each other member streams or not", []pgMember{primary, streaming, connecting, down}, []pgMember{primary}, map[string]float64{
			`cairn_postgres_replica_streaming{cluster="m",member="m-1"}`: 1,
			`cairn_postgres_replica_streaming{cluster="m",member="m-2"}`: 0,
			`cairn_postgres_replica_streaming{cluster="m",member="m-3"}`: 0,
			`cairn_postgres_wal_bytes{cluster="m",member="m-0"}`:         5 << 30,
			`cairn_postgres_wal_bound_bytes{cluster="m",member="m-0"}`:   1536 << 20,
		}},
		{"no primary: nothing to stream from, no series", []pgMember{streaming, down}, nil, map[string]float64{}},
		{"two primaries: no series", []pgMember{primary, second, streaming}, []pgMember{primary, second}, map[string]float64{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := NewPostgresMetrics(reg, "m")
			if err != nil {
				t.Fatal(err)
			}
			m.observe(c.members, c.primaries)
			got := map[string]float64{}
			for k, v := range promtest.Series(t, reg) {
				if strings.HasPrefix(k, "cairn_postgres_replica_streaming") || strings.HasPrefix(k, "cairn_postgres_wal_b") {
					got[k] = v
				}
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("series:\n got  %v\n want %v", got, c.want)
			}
		})
	}
}
