package testbed

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// Tier is how much of the test bed a test needs; the Makefile runs each
// tier with one command (docs/testing.md "Tiers"):
//
//   - TierCheck (`make check`, `go test -short ./...`): pure code, and a
//     control plane (etcd and kube-apiserver, with kube-controller-manager
//     when asked), in-process git and S3 servers.
//   - TierIntegration (`make test-integration`): real database members,
//     PostgreSQL (13 and 15) and etcd, behind the control plane.
//   - TierE2E (`make test-e2e`): real nodes (kubelet, containerd, Flux),
//     tests named TestRealNode*.
type Tier int

const (
	TierCheck Tier = iota
	TierIntegration
	TierE2E
)

func (t Tier) String() string {
	switch t {
	case TierCheck:
		return "check"
	case TierIntegration:
		return "integration"
	case TierE2E:
		return "e2e"
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// target is the make target that runs a tier's tests.
func (t Tier) target() string {
	if t == TierCheck {
		return "make check"
	}
	return "make test-" + t.String()
}

// RealNodePrefix starts the name of every test that runs a real node:
// the e2e tier selects them by it (`go test -run '^TestRealNode'`) and
// the integration tier leaves them out the same way.
const RealNodePrefix = "TestRealNode"

// Require skips t when the run leaves tier out: `go test -short` runs the
// check tier only, so a test that needs a database member or a real node
// says which make target runs it and stops there, before it starts
// anything. A test that runs a real node must be named RealNodePrefix...,
// or the tiers could not select it: Require fails it otherwise.
func Require(t testing.TB, tier Tier, what string) {
	t.Helper()
	if tier == TierE2E && !strings.HasPrefix(t.Name(), RealNodePrefix) {
		t.Fatalf("%s runs %s: a test of the e2e tier is named %s... (testbed.Require)", t.Name(), what, RealNodePrefix)
	}
	if tier > TierCheck && testing.Short() {
		t.Skipf("needs %s, of the %s tier: `%s` runs it", what, tier, tier.target())
	}
}

// binTargets are the make targets that build each program of .cache/bin.
var binTargets = map[string]string{
	"etcd":                    "make testbin",
	"etcd-3.6":                "make testbin",
	"etcd-3.5":                "make testbin",
	"etcd-3.4":                "make testbin",
	"kube-apiserver":          "make testbin-kube",
	"kube-controller-manager": "make testbin-kube",
	"kubelet":                 "make testbin-node",
	"kube-proxy":              "make testbin-node",
	"kube-scheduler":          "make testbin-node",
	"coredns":                 "make testbin-node",
	"source-controller":       "make testbin-node",
	"kustomize-controller":    "make testbin-node",
	"argocd":                  "make testbin-argocd",
	"kustomize":               "make testbin-argocd",
	"promtool":                "make monitoring",
	"helm":                    "make chart",
}

// BinTarget is the make target that builds the program name of
// .cache/bin.
func BinTarget(name string) string {
	if tgt, ok := binTargets[name]; ok {
		return tgt
	}
	return "make testbin"
}

// Missing stops t for a program or file of the test bed that is not
// there (err says which): with -short it skips, saying which make target
// provides it, so `go test -short ./...` passes on a machine with only
// Go; otherwise it fails, so that a full run never passes by skipping.
func Missing(t testing.TB, err error, target string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%v: `%s` provides it", err, target)
	}
	t.Fatalf("%v: run `%s`", err, target)
}

// perMajor holds the names of the tests marked PerMajor.
var perMajor sync.Map

// PerMajor marks t as a test whose behaviour depends on PostgreSQL's
// major version (what the server accepts, writes or replays differs
// between them): the integration tier runs it on PostgreSQL 15, then
// again on 13 ($CAIRN_PG_BIN, the Makefile's second pass). A test not
// marked runs on 15 only: in the second pass PostgresBin skips it. Call
// it first, before PostgresBin or a bed that calls it.
func PerMajor(t testing.TB) { perMajor.Store(t.Name(), true) }

// markedPerMajor reports that t, or a test it is a subtest of, is marked.
func markedPerMajor(t testing.TB) bool {
	name := t.Name()
	for {
		if _, ok := perMajor.Load(name); ok {
			return true
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			return false
		}
		name = name[:i]
	}
}

// skipUnlessPerMajor skips t, in the pass on another major
// ($CAIRN_PG_BIN set), when it is not marked PerMajor: it ran on
// PostgreSQL 15 already.
func skipUnlessPerMajor(t testing.TB) {
	t.Helper()
	if os.Getenv("CAIRN_PG_BIN") != "" && !markedPerMajor(t) {
		t.Skip("runs on PostgreSQL 15 only: its behaviour does not depend on the major (testbed.PerMajor)")
	}
}
