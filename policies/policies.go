package policies

import (
	"cmp"
	"slices"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Input is what a policy sees of one step.
type Input struct {
	// Cluster is the cluster's spec.
	Cluster spec.Cluster
	// Observed is the cluster's observed state; nil before it is created.
	Observed *live.Cluster
	// Step is the step being decided.
	Step plan.Step
	// Index is the step's place in its plan, from 0; the step at 0 is the
	// next to go.
	Index int
}

// Policy decides on steps.
type Policy interface {
	// Name identifies the policy in decisions.
	Name() string
	// Evaluate returns the policy's verdict on one step. It must be pure.
	Evaluate(in Input) plan.Decision
}

// Set is the policies in force.
type Set []Policy

// Evaluate returns the decisions of every policy on one step that has an
// opinion (a decision with a verdict), ordered by policy name. The CEL
// rules among them share one budget of cost (RepoLimits.MaxCost).
func (s Set) Evaluate(in Input) []plan.Decision {
	b := &budget{}
	defer b.close()
	return s.evaluate(in, b)
}

// EvaluateSteps is Evaluate for each step of one plan (ins[i] is step
// i); the CEL rules share one budget of cost and one deadline across the
// whole plan, so a plan of many steps costs no more than one step may.
func (s Set) EvaluateSteps(ins []Input) [][]plan.Decision {
	b := &budget{}
	defer b.close()
	out := make([][]plan.Decision, len(ins))
	for i, in := range ins {
		out[i] = s.evaluate(in, b)
	}
	return out
}

func (s Set) evaluate(in Input, b *budget) []plan.Decision {
	var out []plan.Decision
	rules := &ruleEval{in: in, budget: b}
	for _, p := range s {
		var d plan.Decision
		if r, ok := p.(*Rule); ok {
			d = rules.evaluate(r)
		} else {
			d = p.Evaluate(in)
		}
		if d.Verdict == "" {
			continue
		}
		d.Policy = p.Name()
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b plan.Decision) int { return cmp.Compare(a.Policy, b.Policy) })
	return out
}
