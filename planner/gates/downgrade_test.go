package gates

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

func TestEtcdDowngradeGate(t *testing.T) {
	enabled := &live.EtcdDowngrade{Enabled: true, Target: "3.6", StorageMigrated: true}
	for _, tc := range []struct {
		name string
		want string
		d    *live.EtcdDowngrade
		pass bool
	}{
		{"enabled and migrated", "3.6", enabled, true},
		{"enabled, storage not yet migrated", "3.6", &live.EtcdDowngrade{Enabled: true, Target: "3.6"}, false},
		{"enabled to another minor", "3.5", enabled, false},
		{"not enabled", "3.6", nil, false},
		{"refused by etcd", "3.6", &live.EtcdDowngrade{Error: "etcdserver: invalid downgrade target version"}, false},
		{"none wanted, none enabled", "", &live.EtcdDowngrade{Done: "etcd-downgrade-cancel-3.6"}, true},
		{"none wanted, still enabled", "", enabled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &live.Cluster{Kind: "EtcdCluster", Name: "e", Downgrade: tc.d}
			r := Evaluate(plan.Gate{Kind: plan.GateEtcdDowngrade, Version: tc.want}, nil, obs, time.Time{})
			if r.Pass != tc.pass {
				t.Errorf("pass = %v (%s), want %v", r.Pass, r.Reason, tc.pass)
			}
		})
	}
}
