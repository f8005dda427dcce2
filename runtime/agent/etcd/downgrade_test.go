package etcd

import (
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairn-dev/cairn/planner/contract"
)

// downgradeLook is three healthy members at version with storage at
// storage, reporting the downgrade info d (nil before 3.6).
func downgradeLook(version, storage string, d *etcdserverpb.DowngradeInfo) etcdLook {
	l := etcdLook{listed: true}
	for i := range 3 {
		l.members = append(l.members, lookedMember{id: uint64(i + 1), name: "e-" + string(rune('0'+i)), answered: true, noErrors: true,
			following: true, version: version, storageVersion: storage, downgrade: d})
	}
	return l
}

func TestSeeDowngrade(t *testing.T) {
	on := &etcdserverpb.DowngradeInfo{Enabled: true, TargetVersion: "3.6.0"}
	for _, tc := range []struct {
		name string
		l    etcdLook
		want downgradeSeen
	}{
		{"none", downgradeLook("3.7.3", "3.7.0", &etcdserverpb.DowngradeInfo{}), downgradeSeen{}},
		{"before 3.6: none reported", downgradeLook("3.5.35", "", nil), downgradeSeen{}},
		{"enabled, storage migrated", downgradeLook("3.7.3", "3.6.0", on), downgradeSeen{enabled: true, target: "3.6", migrated: true}},
		{"enabled, storage not yet", downgradeLook("3.7.3", "3.7.0", on), downgradeSeen{enabled: true, target: "3.6"}},
		{"enabled, a member silent", func() etcdLook {
			l := downgradeLook("3.7.3", "3.6.0", on)
			l.members[1] = lookedMember{id: 2, name: "e-1"}
			return l
		}(), downgradeSeen{enabled: true, target: "3.6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := seeDowngrade(tc.l); got != tc.want {
				t.Errorf("seeDowngrade = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecideDowngrade(t *testing.T) {
	enable := downgradeRequest{ID: "etcd-downgrade-to-3.6", Action: contract.EtcdDowngradeEnable, To: "3.6"}
	cancel := downgradeRequest{ID: "etcd-downgrade-cancel-3.6", Action: contract.EtcdDowngradeCancel}
	healthy := downgradeLook("3.7.3", "3.7.0", nil)
	sick := downgradeLook("3.7.3", "3.7.0", nil)
	sick.members[2].following = false
	on := downgradeSeen{enabled: true, target: "3.6", migrated: true}
	for _, tc := range []struct {
		name string
		req  downgradeRequest
		prev *contract.EtcdDowngrade
		seen downgradeSeen
		l    etcdLook
		want downgradeStep
	}{
		{"no request", downgradeRequest{}, nil, downgradeSeen{}, healthy, downgradeNothing},
		{"enable", enable, nil, downgradeSeen{}, healthy, downgradeEnable},
		{"enable, once done not again", enable, &contract.EtcdDowngrade{Done: enable.ID}, downgradeSeen{}, healthy, downgradeNothing},
		{"enable, already enabled: recorded", enable, nil, on, healthy, downgradeRecord},
		{"enable while a member is unhealthy: wait", enable, nil, downgradeSeen{}, sick, downgradeWait},
		{"cancel", cancel, &contract.EtcdDowngrade{Done: enable.ID}, on, healthy, downgradeCancel},
		{"cancel, nothing enabled: recorded", cancel, nil, downgradeSeen{}, healthy, downgradeRecord},
		{"an action it does not know", downgradeRequest{ID: "x", Action: "rewind"}, nil, downgradeSeen{}, healthy, downgradeNothing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideDowngrade(tc.req, tc.prev, tc.seen, tc.l); got != tc.want {
				t.Errorf("decideDowngrade = %v, want %v", got, tc.want)
			}
		})
	}
}
