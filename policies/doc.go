// Package policies holds the rules people who own clusters add on top of
// cairn's domain rules: each policy looks at one planned step (with its
// cluster's spec and observed state) and allows it, holds it for later, or
// denies it, with a reason. The planner records every decision on its step
// (shown by `cairn plan` and in PLAN.md); holding back or refusing a step's
// pull request is up to the publisher and the reconcile loop that read
// them.
//
// A FleetPolicy (concurrency, promotion order) decides on each cluster's next step with the
// whole fleet's plans in view; the planner applies it after planning every
// cluster.
//
// Policies are evaluated by the pure planner, so a policy must be pure as
// well: anything it depends on (the time, other clusters' plans) is given
// to it when it is built or called, never read during Evaluate.
//
// The domain rules of the planner (etcd quorum, one member at a time, no
// storage shrink, ...) are not policies and cannot be turned off here.
//
// Imports: planner/plan, planner/spec, planner/live and
// planner/spec/strictyaml (to decode policy files) only of cairn's, and
// cel-go; never the planner, the renderer or the runtime.
package policies
