package planner

import (
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// pgRelief is what is planned for a PostgreSQL cluster while its plan
// waits (relief.go): fewer synchronous standbys, when the spec lowers
// them. Commits wait on the primary for as many standbys as it is told;
// with one down they may wait for good, and the reload that lowers the
// number needs only the primary, not the standby that is down. Nothing
// is planned without exactly one primary that is ready.
func pgRelief(c *spec.PostgresCluster, obs *live.Cluster, while string) []plan.Step {
	want := c.Spec.SynchronousStandbys
	if want >= obs.SynchronousStandbys {
		return nil
	}
	primary := ""
	for _, m := range obs.Members {
		if m.Role != live.RolePrimary {
			continue
		}
		if primary != "" || !m.Ready {
			return nil
		}
		primary = m.Name
	}
	if primary == "" {
		return nil
	}
	var r Result
	pgSync(&r, &pgModel{name: c.Metadata.Name, sync: obs.SynchronousStandbys}, want, "as the spec asks")
	s := r.Steps[0]
	relieve(&s, while, "commits wait for synchronous standbys that may not be there, and this reload on the primary lowers how many they wait for",
		memberGate(plan.GatePrimary, plan.Before, primary, primary+" is the primary and ready"),
		memberGate(plan.GatePrimary, plan.After, primary, primary+" is still the primary and ready"))
	return []plan.Step{s}
}
