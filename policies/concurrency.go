package policies

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// FleetEntry is what a fleet policy sees of one cluster: its spec, its
// plan's status and the step that goes next.
type FleetEntry struct {
	Cluster spec.Cluster
	// Observed is the cluster's observed state; nil before it is created.
	Observed *live.Cluster
	Status   plan.Status
	// Next is the plan's first step; nil when the plan has none.
	Next *plan.Step
	// Decisions are the other policies' decisions on Next.
	Decisions []plan.Decision
}

// FleetPolicy decides on the next step of each cluster with the whole
// fleet in view.
type FleetPolicy interface {
	Policy
	// EvaluateFleet returns one decision per entry, in the entries'
	// order; a decision without a verdict means no opinion. It must be
	// pure.
	EvaluateFleet(entries []FleetEntry) []plan.Decision
}

// EvaluateFleet returns, for each entry, the decisions of the set's fleet
// policies on its next step, ordered by policy name. Concurrency limits go
// last, and each fleet policy sees the decisions of those before it, so a
// step another policy holds (promotion order, say) takes no place.
func (s Set) EvaluateFleet(entries []FleetEntry) [][]plan.Decision {
	var fleet []FleetPolicy
	for _, p := range s {
		if fp, ok := p.(FleetPolicy); ok {
			fleet = append(fleet, fp)
		}
	}
	slices.SortStableFunc(fleet, func(a, b FleetPolicy) int {
		_, ac := a.(Concurrency)
		_, bc := b.(Concurrency)
		switch {
		case ac == bc:
			return 0
		case bc:
			return -1
		}
		return 1
	})
	out := make([][]plan.Decision, len(entries))
	seen := slices.Clone(entries)
	for _, fp := range fleet {
		for i, d := range fp.EvaluateFleet(seen) {
			if d.Verdict == "" {
				continue
			}
			d.Policy = fp.Name()
			out[i] = append(out[i], d)
			seen[i].Decisions = append(slices.Clone(seen[i].Decisions), d)
		}
	}
	for i := range out {
		slices.SortStableFunc(out[i], func(a, b plan.Decision) int { return cmp.Compare(a.Policy, b.Policy) })
	}
	return out
}

// Concurrency lets at most Max of the selected clusters have a disruptive
// change in flight. A cluster counts as in flight while its plan waits for
// a merged step to show in the live state (cairn cannot tell from the live
// state alone whether that step disrupts, so every wait counts). Clusters
// whose next step is disruptive take the free places in name order, skipping
// those another policy already holds or denies; the rest are held until a
// place frees. The order is the same on every run, so the clusters allowed
// stay allowed while their pull requests are open.
type Concurrency struct {
	PolicyName string
	Max        int
	Selector   Selector
}

// Name implements Policy.
func (c Concurrency) Name() string { return c.PolicyName }

// Evaluate implements Policy; concurrency has no opinion on a step seen
// alone.
func (c Concurrency) Evaluate(Input) plan.Decision { return plan.Decision{} }

// EvaluateFleet implements FleetPolicy.
func (c Concurrency) EvaluateFleet(entries []FleetEntry) []plan.Decision {
	out := make([]plan.Decision, len(entries))
	type candidate struct {
		index int
		name  string
	}
	var inFlight []string
	var candidates []candidate
	for i, e := range entries {
		if !c.Selector.Matches(e.Cluster) {
			continue
		}
		name := e.Cluster.Ref().Kind + "/" + e.Cluster.Ref().Name
		switch {
		case e.Status == plan.StatusWaiting:
			inFlight = append(inFlight, name)
		case e.Next != nil && e.Next.Disruptive && !stopped(e.Decisions):
			candidates = append(candidates, candidate{i, name})
		}
	}
	slices.Sort(inFlight)
	slices.SortFunc(candidates, func(a, b candidate) int { return cmp.Compare(a.name, b.name) })
	free := c.Max - len(inFlight)
	var going []string
	for _, cand := range candidates {
		if free > 0 {
			free--
			going = append(going, cand.name)
			out[cand.index] = plan.Decision{Verdict: plan.Allow, Reason: fmt.Sprintf("%d of at most %d disruptive changes in flight", len(inFlight)+len(going), c.Max)}
			continue
		}
		busy := append(slices.Clone(inFlight), going...)
		out[cand.index] = plan.Decision{Verdict: plan.Hold, Reason: fmt.Sprintf("at most %d disruptive changes may be in flight; busy: %s", c.Max, strings.Join(busy, ", "))}
	}
	return out
}

// stopped reports whether a decision already holds or denies the step.
func stopped(ds []plan.Decision) bool {
	for _, d := range ds {
		if d.Verdict == plan.Hold || d.Verdict == plan.Deny {
			return true
		}
	}
	return false
}
