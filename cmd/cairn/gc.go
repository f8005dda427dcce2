package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The garbage collector's settings, unless the environment sets its own
// (GOGC, GOMEMLIMIT). A pass's work is kustomize builds, which allocate
// short-lived YAML nodes by the gigabyte (a cold render of 1,000 clusters
// allocates about 24 GB) over a live heap of tens of megabytes:
// collecting at five times the live heap rather than twice takes about a
// third off a cold pass (docs/scale.md). A soft memory limit bounds what
// that costs in memory: memoryFloor, or twice the live heap when that is
// more, so a small fleet stays within the fleet benchmark's 500 MB at
// 1,000 clusters while a large one is collected as with Go's defaults
// rather than over and over against a fixed limit (measured: a fixed
// 384 MiB made a cold render of 10,000 clusters take 99 s instead of 41).
const (
	gcPercent   = 400
	memoryFloor = 384 << 20
	// gcTunePeriod is how often the limit follows the live heap.
	gcTunePeriod = 250 * time.Millisecond
)

// tuneGC applies gcPercent and the memory limit where the environment
// leaves them, and keeps the limit following the live heap until stop is
// called. main calls it first; the fleet benchmarks measure with it.
func tuneGC() (stop func()) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	follow := func() { debug.SetMemoryLimit(memoryLimit(liveHeap())) }
	follow()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(gcTunePeriod)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				follow()
			case <-done:
				return
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// memoryLimit is the soft limit for a live heap of live bytes.
func memoryLimit(live uint64) int64 {
	return max(memoryFloor, 2*int64(min(live, 1<<61)))
}

// liveHeap is the heap the last collection found live (0 before one).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
