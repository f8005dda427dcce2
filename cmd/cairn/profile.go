package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// profileEnv names a file to write a CPU profile of the whole command
// into (docs/scale.md, "Profiling the command line"): a developer's aid
// for the paths the in-process benchmarks do not cover, such as process
// start, the clone, and the render of a cold cache.
const profileEnv = "CAIRN_CPUPROFILE"

// startProfile starts the CPU profile $CAIRN_CPUPROFILE asks for; stop
// writes it out. A profile that cannot start is reported and the command
// runs without one.
func startProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv(profileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "cairn: $%s: %v\n", profileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "cairn: $%s: %v\n", profileEnv, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "cairn: $%s: %v\n", profileEnv, err)
		}
	}
}
