// Package live is the observed state the planner plans against: per
// cluster its members (name, version, ready, role), its StatefulSet
// (replicas, update partition, template version), storage size and backup
// status.
//
// A Snapshot is filled from a real cluster by planner/observe (client-go)
// or read from a file in cairn's documented observed-state format
// (`cairn plan --live FILE`, docs/live-state.md). The planner treats it as
// plain data.
//
// Imports: planner/spec (the kinds), planner/contract (the shared
// names), planner/spec/strictyaml (cairn's YAML decoder) and
// apimachinery's quantity and name validation; never the planner, the
// renderer, the runtime or a Kubernetes client. Policies and the planner
// depend on it.
package live
