package policies

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// stepKinds are the step kinds a policy may name: all of them.
func stepKinds() []string {
	var out []string
	for _, k := range plan.Kinds() {
		out = append(out, string(k))
	}
	return out
}

// Window holds disruptive steps of the selected clusters outside a
// maintenance window a policy file sets.
type Window struct {
	PolicyName string
	Window     *spec.MaintenanceWindow
	Now        time.Time
	Selector   Selector
}

// Name implements Policy.
func (w Window) Name() string { return w.PolicyName }

// Evaluate implements Policy.
func (w Window) Evaluate(in Input) plan.Decision {
	if !in.Step.Disruptive || !w.Selector.Matches(in.Cluster) {
		return plan.Decision{}
	}
	return windowDecision(w.Window, w.Now)
}

// Freshness holds risky steps of the selected clusters until the last
// successful backup is younger than MaxAge. Its reasons hold no text the
// clock changes (no age): the same verdict on the same backup always
// reads the same.
type Freshness struct {
	PolicyName string
	MaxAge     time.Duration
	// Kinds are the step kinds held; empty means major upgrades and
	// scale-ins.
	Kinds    []string
	Now      time.Time
	Selector Selector
}

// Name implements Policy.
func (f Freshness) Name() string { return f.PolicyName }

// Evaluate implements Policy.
func (f Freshness) Evaluate(in Input) plan.Decision {
	kinds := f.Kinds
	if len(kinds) == 0 {
		kinds = []string{string(plan.PostgresMajorUpgrade), string(plan.ScaleIn)}
	}
	if !slices.Contains(kinds, string(in.Step.Kind)) || !f.Selector.Matches(in.Cluster) {
		return plan.Decision{}
	}
	if in.Observed == nil || in.Observed.Backup == nil || in.Observed.Backup.LastSuccessful == "" {
		return plan.Decision{Verdict: plan.Hold, Reason: "no successful backup is known; take one first"}
	}
	last := in.Observed.Backup.LastSuccessful
	if f.Now.Sub(last.Time()) > f.MaxAge {
		return plan.Decision{Verdict: plan.Hold, Reason: fmt.Sprintf("the last backup, taken at %s, is older than the %s limit; take a new one", last, f.MaxAge)}
	}
	// Clock-free: the plan is rendered into the step's branch, which must
	// not change as the backup ages (each push dismisses reviews and
	// reruns CI), nor with each new backup while the verdict stays.
	return plan.Decision{Verdict: plan.Allow, Reason: fmt.Sprintf("a backup younger than %s is known", f.MaxAge)}
}
