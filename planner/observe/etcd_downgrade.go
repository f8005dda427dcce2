package observe

import (
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

// etcdDowngrade is the runtime's report of etcd's downgrade; nil when it
// has none.
func etcdDowngrade(d *contract.EtcdDowngrade) *live.EtcdDowngrade {
	if d == nil || *d == (contract.EtcdDowngrade{}) {
		return nil
	}
	return &live.EtcdDowngrade{Enabled: d.Enabled, Target: d.Target, StorageMigrated: d.StorageMigrated, Done: d.Done, Error: d.Error}
}
