package observe

import (
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

// etcdMaintenanceConfig reads the compaction policy and the space quota
// the rendered config sets.
func etcdMaintenanceConfig(out *live.Cluster, data map[string]string) {
	out.SpaceQuota = data[contract.KeyEtcdQuotaBackendBytes]
	if mode := data[contract.KeyEtcdCompactionMode]; mode != "" {
		out.Compaction = &live.Compaction{Mode: mode, Retention: data[contract.KeyEtcdCompactionRetention]}
	}
}

// etcdMaintenanceStatus reads the runtime's maintenance report: the
// alarms raised, whether it runs the rendered compaction policy, and each
// member's database sizes, by member name.
func etcdMaintenanceStatus(raw string, out *live.Cluster) (map[string]contract.EtcdMemberSpace, error) {
	st, err := contract.ParseEtcdMaintenanceStatus(raw)
	if err != nil {
		return nil, err
	}
	for _, a := range st.Alarms {
		out.Alarms = append(out.Alarms, live.Alarm{Member: a.Member, Alarm: a.Alarm, Since: live.Timestamp(a.Since)})
	}
	if c := out.Compaction; c != nil {
		c.Applied = st.Compaction.Mode == c.Mode && st.Compaction.Retention == c.Retention
	}
	space := map[string]contract.EtcdMemberSpace{}
	for _, m := range st.Members {
		if m.Name != "" {
			space[m.Name] = m
		}
	}
	return space, nil
}
