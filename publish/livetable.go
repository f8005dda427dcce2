package publish

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// maxLiveRows bounds the live table: a live state is bounded already,
// the body must stay readable.
const maxLiveRows = 32

// verified is the observed cluster when it is the very state the plan
// was made against (its fingerprint is the plan's), else nil: the body
// never shows, or derives anything from, another state.
func verified(p plan.Plan, c *live.Cluster) *live.Cluster {
	if c == nil || plan.Fingerprint(c) != p.ObservedFingerprint {
		return nil
	}
	return c
}

// writeLive writes the live state the plan was made against as a small
// table: the StatefulSet, then each member's role, version and
// readiness. Nothing when the state is not known or not the plan's.
func writeLive(b *strings.Builder, p plan.Plan, c *live.Cluster) {
	if c = verified(p, c); c == nil {
		return
	}
	st := c.StatefulSet
	fmt.Fprintf(b, "**Live state this step was planned against** (observed `%s`): StatefulSet at %d replica(s), update partition %d, template version %s",
		short(strings.TrimPrefix(p.ObservedFingerprint, "sha256:")), st.Replicas, st.UpdatePartition, md(orNone(st.Version)))
	if c.ClusterVersion != "" {
		fmt.Fprintf(b, "; cluster version %s", md(c.ClusterVersion))
	}
	if c.SynchronousStandbys > 0 {
		fmt.Fprintf(b, "; %d synchronous standby(s)", c.SynchronousStandbys)
	}
	b.WriteString(".\n\n")
	if len(c.Members) == 0 {
		b.WriteString("No member runs.\n\n")
		return
	}
	b.WriteString("| Member | Role | Version | Ready |\n|---|---|---|---|\n")
	for i, m := range c.Members {
		if i == maxLiveRows {
			fmt.Fprintf(b, "| … %d more | | | |\n", len(c.Members)-i)
			break
		}
		ready := yesNo(m.Ready)
		if m.DataLost {
			ready += ", data lost"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", md(m.Name), md(orNone(string(m.Role))), md(orNone(m.Version)), ready)
	}
	b.WriteString("\n")
}

func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
