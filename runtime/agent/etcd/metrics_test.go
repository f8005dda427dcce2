package etcd

import (
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/testbed/agentbed"
)

// An etcd runtime's standby exports its counters only; its leader what it
// observed (agentbed.MetricsOfStandbyAndLeader).
func TestMetricsOfStandbyAndLeader(t *testing.T) {
	pass := func(k agent.Keeper) {
		k.(*Membership).Metrics.observe(etcdStatus{Quorum: true, Members: []contract.EtcdMember{
			{Name: "m-0", Leader: true, Healthy: true}, {Name: "m-1", Healthy: true}, {Name: "m-2", Learner: true}}}, action{}, false)
		k.(*Membership).Metrics.observeMaint(contract.EtcdMaintenanceStatus{
			Members: []contract.EtcdMemberSpace{{Name: "m-0", DBSize: 100, DBSizeInUse: 50}},
			Alarms:  []contract.EtcdAlarm{{Member: "m-0", ID: "1", Alarm: contract.EtcdAlarmNoSpace}}}, 2<<30, maintAction{}, maintResult{})
	}
	agentbed.MetricsOfStandbyAndLeader(t, agentbed.MetricsCase{Kind: spec.EtcdKind, Factory: agentbed.Scripted(Config{}.Keeper, pass),
		Standby: map[string]float64{
			`cairn_etcd_membership_changes_total{change="promote",cluster="m"}`:     0,
			`cairn_etcd_membership_changes_total{change="remove",cluster="m"}`:      0,
			`cairn_etcd_membership_changes_total{change="replace",cluster="m"}`:     0,
			`cairn_etcd_membership_changes_total{change="move-leader",cluster="m"}`: 0,
			`cairn_etcd_maintenance_total{action="compact",cluster="m"}`:            0,
			`cairn_etcd_maintenance_total{action="defrag",cluster="m"}`:             0,
			`cairn_etcd_maintenance_total{action="disarm",cluster="m"}`:             0,
		}, Leader: map[string]float64{
			`cairn_etcd_members{cluster="m",role="voter"}`:              2,
			`cairn_etcd_members{cluster="m",role="learner"}`:            1,
			`cairn_etcd_quorum{cluster="m"}`:                            1,
			`cairn_etcd_has_leader{cluster="m"}`:                        1,
			`cairn_etcd_alarms{alarm="NOSPACE",cluster="m"}`:            1,
			`cairn_etcd_alarms{alarm="CORRUPT",cluster="m"}`:            0,
			`cairn_etcd_db_size_bytes{cluster="m",member="m-0"}`:        100,
			`cairn_etcd_db_size_in_use_bytes{cluster="m",member="m-0"}`: 50,
			`cairn_etcd_space_quota_bytes{cluster="m"}`:                 2 << 30,
		}})
}
