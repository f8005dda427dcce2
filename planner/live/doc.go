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
// This package imports only cairn's internal YAML decoder; policies and
// the planner depend on it.
package live
