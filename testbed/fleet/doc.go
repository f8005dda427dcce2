// Package fleet generates a GitOps repo of many clusters for the fleet
// benchmark (docs/testing.md, "Fleet benchmark"): n clusters, half etcd
// and half PostgreSQL, about 60% of them with a step to take (scale-out,
// minor upgrade, storage growth, create) and the rest converged, with the
// live state that makes them so in cairn's observed-state format (the
// file `--live` reads, docs/live-state.md). The same n and seed give the
// same repo and live state, byte for byte.
//
// Advance plays a merged step out in the live state, as the cluster would
// once the step is synced; WriteBare and Merge write the repo into a bare
// git repo and merge a step's branch into main as a person would, with
// plain go-git (not cairn's publisher).
//
// For tests and benchmarks only; no product package imports it. It
// imports nothing of cairn's.
package fleet
