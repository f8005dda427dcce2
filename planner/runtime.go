package planner

import (
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// runtimeStep hardens a running cluster's runtime by a reviewed step: its
// Deployment's container gets a read-only root filesystem, writes only
// to an emptyDir at contract.RuntimeTmpDir, and gets a memory request and
// limit (contract.RuntimeMemoryRequest, RuntimeMemoryLimit). A cluster
// created by cairn has them from its create step; one rendered before
// keeps its runtime as it runs (the base renders what observe reads back)
// until this step is merged, so the change never rides in another step's
// pull request. The step is runtime-read-only-root while the root is
// writable (it brings the memory bounds too), and runtime-memory-limit
// for a runtime hardened before cairn set memory bounds. No step goes
// back: the spec has no way to ask for a writable root or no limit.
//
// It is not disruptive: the Deployment replaces the runtime's two pods
// one at a time and no member restarts; while the leading replica is
// replaced, failover and backups wait until the other takes its Lease
// over once it expires (15 s: the leader does not release it on its way
// out, runtime/agent).
func runtimeStep(r *Result, obs *live.Cluster) {
	if obs.Runtime.ReadOnlyRoot && !obs.Runtime.NoMemoryLimit {
		return
	}
	d := contract.Runtime(obs.Name)
	memory := "a memory request of " + contract.RuntimeMemoryRequest + " and a limit of " + contract.RuntimeMemoryLimit
	id, summary := "runtime-read-only-root", "Run the cluster's runtime (Deployment "+d+") with a read-only root filesystem, writing only to an emptyDir of at most "+
		contract.RuntimeTmpSizeLimit+" at "+contract.RuntimeTmpDir+", and "+memory
	rollback := "Revert this pull request: the runtime's pods come back with a writable root filesystem and no memory limit."
	if obs.Runtime.ReadOnlyRoot {
		id, summary = "runtime-memory-limit", "Run the cluster's runtime (Deployment "+d+") with "+memory
		rollback = "Revert this pull request: the runtime's pods come back with no memory limit."
	}
	r.add(plan.Step{
		ID:         id,
		Kind:       plan.HardenRuntime,
		Summary:    summary + " (its pods are replaced one at a time; no member restarts)",
		Reversible: true,
		Rollback:   rollback,
		Gates:      []plan.Gate{healthyBefore()},
		Params: plan.Params{HardenRuntime: &plan.HardenRuntimeParams{Deployment: d, Writable: []string{contract.RuntimeTmpDir},
			MemoryRequest: contract.RuntimeMemoryRequest, MemoryLimit: contract.RuntimeMemoryLimit}},
	})
}
