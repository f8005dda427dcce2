package gates

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/live"
)

// etcdDowngrade checks an EtcdDowngrade gate: a downgrade of the cluster
// version to minor want enabled and every member's storage migrated to
// it, or, with want empty, no downgrade enabled.
func etcdDowngrade(obs *live.Cluster, want string) (bool, string) {
	target, on := obs.DowngradeEnabled()
	d := obs.Downgrade
	switch {
	case want == "" && on:
		return false, fmt.Sprintf("etcd still has the downgrade to %s enabled", target)
	case want == "":
		return true, ""
	case !on && d != nil && d.Error != "":
		return false, "etcd refused it: " + d.Error
	case !on:
		return false, "etcd reports no downgrade enabled"
	case target != want:
		return false, fmt.Sprintf("etcd has a downgrade to %s enabled", target)
	case !d.StorageMigrated:
		return false, fmt.Sprintf("not every member's storage is at %s yet", want)
	}
	return true, ""
}
