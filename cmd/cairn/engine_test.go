package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/argobed"
	"github.com/cairn-dev/cairn/testbed/fluxbed"
)

// engine is the real sync engine a real-node scenario runs under, the
// table dimension of the walkthroughs (engines): it applies each commit
// merged on main, and says, asked at a settled point, whether what runs
// differs from Git. Each answer is the engine's own; nothing here diffs.
type engine interface {
	// follow makes the engine sync the rendered folder of each of
	// clusters, in the repo at url, into namespace ns.
	follow(t *testing.T, url string, clusters []string, ns string)
	// names are the clusters the engine syncs, sorted.
	names(t *testing.T) []string
	// applied waits until the engine has applied commit of cluster.
	applied(t *testing.T, cluster, commit string)
	// drift is what the engine, asked now, reports differing between
	// Git and the cluster for cluster; none when nothing does.
	drift(t *testing.T, cluster string) []string
}

// engines are the rows of the engine table: every real-node walkthrough
// written as engineTable runs once under each.
var engines = []struct {
	name  string
	start func(t *testing.T, cp *testbed.ControlPlane) engine
}{
	{"Flux", func(t *testing.T, cp *testbed.ControlPlane) engine { return fluxEngine{fluxbed.Start(t, cp)} }},
	{"ArgoCD", func(t *testing.T, cp *testbed.ControlPlane) engine { return argoEngine{argobed.Start(t, cp)} }},
}

// engineTable runs scenario as a subtest per engine, each on a bed of
// its own that newBed makes with that engine.
func engineTable(t *testing.T, scenario func(t *testing.T, start func(*testing.T, *testbed.ControlPlane) engine)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { scenario(t, e.start) })
	}
}

// fluxEngine is Flux: the flux-system GitRepository and a Kustomization
// per cluster made from examples/flux.
type fluxEngine struct{ f *fluxbed.Flux }

func (e fluxEngine) follow(t *testing.T, url string, clusters []string, ns string) {
	e.f.GitRepository(t, url, "main", gitUser, gitToken, 2*time.Second)
	for _, c := range clusters {
		e.f.Kustomization(t, c, ns)
	}
}

func (e fluxEngine) names(t *testing.T) []string { return e.f.Names(t) }

func (e fluxEngine) applied(t *testing.T, cluster, commit string) {
	e.f.WaitApplied(t, cluster, commit, 5*time.Minute)
}

// drift is what one more apply of the head, asked for now, changed in
// the cluster (Flux's event lines).
func (e fluxEngine) drift(t *testing.T, cluster string) []string {
	return e.f.Drift(t, cluster, 3*time.Minute)
}

// argoEngine is Argo CD: a repository Secret and an Application per
// cluster made from examples/argocd.
type argoEngine struct{ a *argobed.ArgoCD }

func (e argoEngine) follow(t *testing.T, url string, clusters []string, ns string) {
	e.a.Repository(t, url, gitUser, gitToken)
	for _, c := range clusters {
		e.a.Application(t, c, url, ns)
	}
}

func (e argoEngine) names(t *testing.T) []string { return e.a.Names(t) }

func (e argoEngine) applied(t *testing.T, cluster, commit string) {
	e.a.WaitSynced(t, cluster, commit, 5*time.Minute)
}

// drift is Argo CD's verdict after a hard refresh: anything but Synced,
// a resource not Synced, or a second sync of the same commit (self-heal
// repaired drift since the last look) is drift. Health may lag the
// cluster by a resync (a pod just ready): it is asked again, within a
// bound, while Argo CD reports everything Synced.
func (e argoEngine) drift(t *testing.T, cluster string) []string {
	var s argobed.Status
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s = e.a.Drift(t, cluster, 2*time.Minute)
		if s.Sync != argobed.Synced || len(s.NotSynced) > 0 || s.SyncsOfRevision > 1 {
			return []string{s.String()}
		}
		if s.Settled() {
			return nil
		}
		if time.Now().After(deadline) {
			return []string{fmt.Sprintf("not Healthy after 2m: %s", s)}
		}
		time.Sleep(time.Second)
	}
}
