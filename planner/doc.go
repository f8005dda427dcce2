// Package planner is cairn's pure planning core: the cluster specs from Git
// and the observed live state in, one ordered plan of small, safe, gated
// steps per cluster out.
//
//	New(Etcd(), Postgres()).Plan(desired, observed, policies) -> plan.List
//
// Plan does no I/O, reads no clock and is deterministic: the same input
// gives the same bytes. There is one Strategy per kind (etcd.go,
// postgres.go), wired by the caller (cmd/cairn's table of kinds); a
// cluster of a kind without one is refused. Each strategy first checks the domain rules that refuse a change,
// then waits if a change is still in flight (a member not ready, a learner
// not yet promoted, a rollout not finished), finishes a half-applied step,
// and only then plans the rest, one member at a time.
//
// The planner is stateless: it does not know which pull requests are open
// or merged. A step that was merged but has not taken effect yet is planned
// again with the same ID, which is how the publisher recognises it.
//
// Imports: planner/plan, planner/spec, planner/live, planner/contract,
// policies. Never the
// runtime, the renderer, Git, GitHub or a Kubernetes client.
package planner
