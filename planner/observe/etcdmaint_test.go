package observe

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

// The runtime's maintenance report and the rendered config reach the
// live state: the policy and quota the config sets, whether the runtime
// runs that policy, the alarms, and each member's database.
func TestEtcdMaintenanceObserved(t *testing.T) {
	report, _ := json.Marshal(contract.EtcdMaintenanceStatus{
		ObservedAt: "2026-11-30T02:00:00Z",
		Members:    []contract.EtcdMemberSpace{{Name: "e-0", ID: "a", DBSize: 4 << 20, DBSizeInUse: 1 << 20, Quota: 4 << 20}},
		Alarms:     []contract.EtcdAlarm{{Member: "e-0", ID: "a", Alarm: contract.EtcdAlarmNoSpace, Since: "2026-11-30T01:59:00Z"}},
		Compaction: contract.EtcdCompactionState{Mode: "revision", Retention: "1000"},
	})
	for _, tc := range []struct {
		name   string
		config map[string]string
		want   *live.Compaction
	}{
		{"the runtime runs the rendered policy", map[string]string{contract.KeyEtcdCompactionMode: "revision", contract.KeyEtcdCompactionRetention: "1000", contract.KeyEtcdQuotaBackendBytes: "4194304"},
			&live.Compaction{Mode: "revision", Retention: "1000", Applied: true}},
		{"a policy the runtime does not run yet", map[string]string{contract.KeyEtcdCompactionMode: "periodic", contract.KeyEtcdCompactionRetention: "1h", contract.KeyEtcdQuotaBackendBytes: "4194304"},
			&live.Compaction{Mode: "periodic", Retention: "1h"}},
		{"a config rendered before compaction", map[string]string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out live.Cluster
			applyConfig(&out, tc.config)
			member, err := Etcd().Status(map[string]string{contract.StatusKeyEtcdMaintenance: string(report)}, &out)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Compaction, tc.want) || out.SpaceQuota != tc.config[contract.KeyEtcdQuotaBackendBytes] {
				t.Errorf("compaction %+v quota %q, want %+v", out.Compaction, out.SpaceQuota, tc.want)
			}
			if want := []live.Alarm{{Member: "e-0", Alarm: "NOSPACE", Since: "2026-11-30T01:59:00Z"}}; !reflect.DeepEqual(out.Alarms, want) {
				t.Errorf("alarms %+v", out.Alarms)
			}
			var m live.Member
			member(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "e-0"}}, &m)
			if m.DBSize != 4<<20 || m.DBSizeInUse != 1<<20 || m.SpaceQuota != 4<<20 {
				t.Errorf("member %+v", m)
			}
		})
	}
	if _, err := Etcd().Status(map[string]string{contract.StatusKeyEtcdMaintenance: "{"}, &live.Cluster{}); err == nil {
		t.Error("a report that is not JSON is no error")
	}
}
