package gates

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// compactionApplied checks that the rendered config sets compaction
// policy want and that the runtime reports running it. want is the step's
// policy; nil reads the spec's.
func compactionApplied(want *plan.CompactionSettings, c spec.Cluster, obs *live.Cluster) (bool, string) {
	if want == nil {
		e, ok := c.(*spec.EtcdCluster)
		if !ok {
			return false, "only etcd clusters are compacted"
		}
		p := e.Spec.CompactionPolicy()
		want = &plan.CompactionSettings{Mode: p.Mode, Retention: string(p.Retention)}
	}
	have := obs.Compaction
	switch {
	case have == nil:
		return false, "the rendered config sets no compaction"
	case have.Mode != want.Mode || have.Retention != want.Retention:
		return false, fmt.Sprintf("the rendered config sets %s %s", have.Mode, have.Retention)
	case !have.Applied:
		return false, "the runtime does not report running it yet"
	}
	return true, ""
}
