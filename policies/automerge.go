package policies

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// AutoMergeSpec configures the auto-merge policy.
type AutoMergeSpec struct {
	// Kinds are the step kinds cairn merges itself once their gates pass;
	// never a kind whose steps are always irreversible.
	Kinds []string `json:"kinds"`
}

// AutoMerge lets cairn merge the pull requests of the selected clusters'
// steps of the given kinds itself. It never holds a step: it allows the
// step with AutoMerge set, and plan.Step.AutoMerge has the last word (an
// irreversible step, or one another policy holds, is left to a person). A
// step that is irreversible this time (the member completing an etcd minor
// upgrade) gets an Allow without AutoMerge that says so.
type AutoMerge struct {
	PolicyName string
	Kinds      []plan.Kind
	Selector   Selector
}

// Name implements Policy.
func (a AutoMerge) Name() string { return a.PolicyName }

// Evaluate implements Policy.
func (a AutoMerge) Evaluate(in Input) plan.Decision {
	if !slices.Contains(a.Kinds, in.Step.Kind) || !a.Selector.Matches(in.Cluster) {
		return plan.Decision{}
	}
	if !in.Step.Reversible {
		return plan.Decision{Verdict: plan.Allow, Reason: "a person merges this step: it cannot be undone"}
	}
	return plan.Decision{Verdict: plan.Allow, AutoMerge: true, Reason: fmt.Sprintf("cairn merges %s steps once their gates pass", in.Step.Kind)}
}

// buildAutoMerge checks an autoMerge section: known kinds, none that is
// always irreversible.
func buildAutoMerge(name string, a *AutoMergeSpec, sel Selector, fail func(path, format string, args ...any)) (Policy, bool) {
	if len(a.Kinds) == 0 {
		fail("spec.autoMerge.kinds", "lists the step kinds cairn may merge, such as [EtcdAddMember, PostgresAddReplica]")
		return nil, false
	}
	ok := true
	kinds := make([]plan.Kind, 0, len(a.Kinds))
	for i, k := range a.Kinds {
		path := fmt.Sprintf("spec.autoMerge.kinds[%d]", i)
		switch {
		case !slices.Contains(stepKinds(), k):
			fail(path, "unknown step kind %s; valid: %s", strictyaml.Quote(k), strings.Join(stepKinds(), ", "))
			ok = false
		case plan.Kind(k).Irreversible():
			fail(path, "%s steps are irreversible: cairn never merges them, a person does", k)
			ok = false
		}
		kinds = append(kinds, plan.Kind(k))
	}
	if !ok {
		return nil, false
	}
	return AutoMerge{PolicyName: name + "/auto-merge", Kinds: kinds, Selector: sel}, true
}
