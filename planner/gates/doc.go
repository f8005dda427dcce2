// Package gates evaluates a step's gates against the observed state: is
// the member ready, at its version, a voter; is the cluster healthy; is a
// backup fresh. It is pure: the time is an argument.
//
// cairn reconcile uses it to open the next step's pull request only after
// the merged step's "after" gates hold in the live state.
//
// cairn propose and reconcile merge a step a policy lets cairn merge only
// when its "before" gates hold (Before), the maintenance window included.
//
// Imports: planner/plan, planner/spec, planner/live, policies (the
// maintenance window's one definition).
package gates
