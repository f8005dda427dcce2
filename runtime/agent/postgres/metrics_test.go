package postgres

import (
	"testing"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/testbed/agentbed"
)

// A PostgreSQL runtime's standby exports its counters only; its leader
// what it observed (agentbed.MetricsOfStandbyAndLeader).
func TestMetricsOfStandbyAndLeader(t *testing.T) {
	pass := func(k agent.Keeper) {
		primary := pgMember{Name: "m-0", Probe: pgProbe{Reach: reachUp, Received: 300, Replayed: 300}}
		replica := pgMember{Name: "m-1", Probe: pgProbe{Reach: reachUp, InRecovery: true, Received: 200, Replayed: 100}}
		k.(*Roles).Metrics.observe([]pgMember{primary, replica}, []pgMember{primary})
	}
	agentbed.MetricsOfStandbyAndLeader(t, agentbed.MetricsCase{Kind: spec.PostgresKind, Factory: agentbed.Scripted(Config{}.Keeper, pass),
		Standby: map[string]float64{
			`cairn_postgres_failovers_total{cluster="m"}`: 0,
		}, Leader: map[string]float64{
			`cairn_postgres_primary{cluster="m",member="m-0"}`:           1,
			`cairn_postgres_primary{cluster="m",member="m-1"}`:           0,
			`cairn_postgres_replica_lag_bytes{cluster="m",member="m-1"}`: 200,
		}})
}
