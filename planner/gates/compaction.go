package gates

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// compacted is a cluster whose kind compacts its history, and the policy
// its spec asks for (with its defaults).
type compacted interface {
	Compaction() (mode, retention string)
}

// compactionApplied checks that the rendered config sets compaction
// policy want and that the runtime reports running it. want is the step's
// policy; nil reads the spec's.
func compactionApplied(want *plan.CompactionSettings, c spec.Cluster, obs *live.Cluster) (bool, string) {
	if want == nil {
		k, ok := c.(compacted)
		if !ok {
			return false, fmt.Sprintf("a %s is not compacted", c.Ref().Kind)
		}
		mode, retention := k.Compaction()
		want = &plan.CompactionSettings{Mode: mode, Retention: retention}
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
