package renderer

import (
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
)

// addDowngrade writes a merged EtcdDowngrade step's request: its ID, what
// it asks and, to enable a downgrade, the target minor.
func addDowngrade(data map[string]string, id string, p *plan.EtcdDowngradeParams) {
	if p == nil {
		return
	}
	data[contract.KeyRequestEtcdDowngradeID] = id
	data[contract.KeyRequestEtcdDowngradeAction] = p.Action
	if p.Action == contract.EtcdDowngradeEnable {
		data[contract.KeyRequestEtcdDowngradeTo] = p.To
	}
}
