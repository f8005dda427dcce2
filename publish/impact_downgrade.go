package publish

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
)

// etcdDowngradeEffect is what an EtcdDowngrade step does to the members:
// none restarts; etcd changes its cluster version.
func etcdDowngradeEffect(d *plan.EtcdDowngradeParams) string {
	if d.Action == contract.EtcdDowngradeCancel {
		return fmt.Sprintf("none: no member restarts; etcd cancels the downgrade to %s and raises its cluster version again once every member runs %s", md(d.From), md(d.To))
	}
	return fmt.Sprintf("none: no member restarts; etcd lowers its cluster version to %s and the features of %s are off from then on", md(d.To), md(d.From))
}
