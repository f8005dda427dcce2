package testbed

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// A shared control plane serves every test of a package (of its test
// binary) that asks for one with the same Options, as Flux's suites
// share one envtest: it is started by the first such test and stopped
// by Main when the package's tests are done. Tests keep apart by
// namespace: Namespace gives each its own, never one another test made.
var shared struct {
	sync.Mutex
	planes   map[Options]*ControlPlane
	cleanups []func()
	dir      string
}

// Shared is the package's control plane for opts, started on first use.
// The package's TestMain must call Main, which stops it. Options with a
// Node are not shared: a real node's plane belongs to its test.
func Shared(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if opts.Node != nil {
		t.Fatal("testbed.Shared: a real node's control plane is its test's own (kubenode.Start)")
	}
	shared.Lock()
	defer shared.Unlock()
	if cp, ok := shared.planes[opts]; ok {
		return cp
	}
	if shared.dir == "" {
		t.Fatal("testbed.Shared needs the package's TestMain to call testbed.Main")
	}
	// The programs first, with the test's own t, so a missing one skips
	// or fails this test as Start would.
	Bin(t, "etcd")
	Bin(t, "kube-apiserver")
	if opts.ControllerManager {
		Bin(t, "kube-controller-manager")
	}
	cp := StartWith(processTB{TB: t}, opts)
	cp.shared = true
	if shared.planes == nil {
		shared.planes = map[Options]*ControlPlane{}
	}
	shared.planes[opts] = cp
	return cp
}

// Main runs a package's tests (call it from TestMain) and then stops the
// control planes they shared.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-testbed-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbed.Main:", err)
		os.Exit(1)
	}
	shared.dir = dir
	code := m.Run()
	shared.Lock()
	for i := len(shared.cleanups) - 1; i >= 0; i-- {
		shared.cleanups[i]()
	}
	shared.Unlock()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// processTB is the test that starts a shared control plane, with what
// outlives it taken over by the process: its cleanups run at Main's end,
// its folders are Main's, and what it would log then goes to standard
// error (a test that has ended cannot log).
type processTB struct{ testing.TB }

func (processTB) Cleanup(f func()) { shared.cleanups = append(shared.cleanups, f) }

func (processTB) TempDir() string {
	dir, err := os.MkdirTemp(shared.dir, "cp-")
	if err != nil {
		panic(fmt.Sprintf("testbed: shared control plane folder: %v", err))
	}
	return dir
}

func (processTB) Failed() bool { return false }

func (processTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...)
}
