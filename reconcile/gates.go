package reconcile

import (
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/renderer"
)

// Gates checks a step's gates against a cluster's live state at a time
// (cmd/cairn wires planner/gates). A gate the live state does not show
// does not pass; why names the first gate that does not.
type Gates interface {
	// Before reports whether the step may start.
	Before(s plan.Step, c spec.Cluster, obs *live.Cluster, now time.Time) (pass bool, why string)
	// After reports whether the step shows done.
	After(s plan.Step, c spec.Cluster, obs *live.Cluster, now time.Time) (pass bool, why string)
}

// holdRule is the publisher's Hold for one pass: the specs and the live
// state that pass planned with, and the base branch's files read through
// read. Each cluster whose merged step waits for its gates is recorded in
// waiting (its name -> the step), for the metrics.
func (l *Loop) holdRule(read func(string) ([]byte, error), clusters []spec.Cluster, observed *live.Snapshot, waiting map[string]string) func(plan.Plan) (bool, string) {
	byName := make(map[string]spec.Cluster, len(clusters))
	for _, c := range clusters {
		byName[c.Ref().Name] = c
	}
	return func(pl plan.Plan) (bool, string) {
		held, why, step := l.held(read, pl, byName[pl.Cluster.Name], observed.Find(pl.Cluster.Kind, pl.Cluster.Name))
		if step != "" {
			waiting[pl.Cluster.Name] = step
		}
		return held, why
	}
}

// held reads the step the base branch's entry point selects (the step
// merged last) and its plan, and holds the cluster until that step's
// "after" gates pass in the live state; waitingFor is that step while its
// gates do not pass.
func (l *Loop) held(read func(string) ([]byte, error), pl plan.Plan, c spec.Cluster, obs *live.Cluster) (held bool, why, waitingFor string) {
	if c == nil {
		return false, "", ""
	}
	e, err := renderer.ReadEntry(read, pl.Cluster.Name)
	switch {
	case e.Step == "":
		return false, "", "" // nothing merged yet, or the base selected
	case err != nil:
		return true, fmt.Sprintf("merged step %s: %v", e.Step, err), ""
	case e.Plan.SpecFingerprint != pl.SpecFingerprint:
		// The spec changed since: its plan goes ahead (and supersedes).
		return false, "", ""
	}
	s, ok := e.Selected()
	if !ok {
		return true, fmt.Sprintf("merged step %s is not in its plan.json", e.Step), ""
	}
	if ok, why := l.cfg.Gates.After(s, c, obs, l.cfg.Now()); !ok {
		return true, fmt.Sprintf("waiting for merged step %s: %s", e.Step, why), e.Step
	}
	return false, "", ""
}

// beforeGates is the publisher's MergeGates: whether a plan's next step's
// "before" gates pass in the live state at now, the time the policies
// decided at.
func (l *Loop) beforeGates(clusters []spec.Cluster, observed *live.Snapshot, now time.Time) func(plan.Plan) (bool, string) {
	return func(pl plan.Plan) (bool, string) {
		for _, c := range clusters {
			if c.Ref().Kind == pl.Cluster.Kind && c.Ref().Name == pl.Cluster.Name && len(pl.Steps) > 0 {
				return l.cfg.Gates.Before(pl.Steps[0], c, observed.Find(pl.Cluster.Kind, pl.Cluster.Name), now)
			}
		}
		return false, "the cluster has no spec"
	}
}

// afterGates is the publisher's After for one pass: whether a merged step
// of a cluster shows done in the live state the pass observed, checked at
// now() (the hold rule's clock).
func (l *Loop) afterGates(clusters []spec.Cluster, observed *live.Snapshot, now func() time.Time) func(plan.ClusterRef, plan.Step) (bool, string) {
	return func(ref plan.ClusterRef, s plan.Step) (bool, string) {
		for _, c := range clusters {
			if c.Ref().Kind == ref.Kind && c.Ref().Name == ref.Name {
				return l.cfg.Gates.After(s, c, observed.Find(ref.Kind, ref.Name), now())
			}
		}
		return false, "the cluster has no spec"
	}
}
