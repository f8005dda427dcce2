package main

import (
	"os"
	"runtime/debug"
)

// The garbage collector's settings, unless the environment sets its own
// (GOGC, GOMEMLIMIT). A pass's work is kustomize builds, which allocate
// short-lived YAML nodes by the gigabyte (a cold render of 1,000 clusters
// allocates about 24 GB) over a live heap of tens of megabytes: collecting
// at five times the live heap rather than twice takes about a fifth off a
// cold pass (docs/scale.md), and the soft limit keeps the heap bounded,
// the collector running as often as it must past it.
const (
	gcPercent   = 400
	memoryLimit = 512 << 20
)

// tuneGC applies gcPercent and memoryLimit where the environment leaves
// them; main calls it first, and the fleet benchmarks measure with it.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}
