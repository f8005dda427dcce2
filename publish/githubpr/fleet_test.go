package githubpr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
)

// fleetCluster is a spec of the fleet: a name, nothing more.
type fleetCluster struct{ name string }

func (c fleetCluster) Ref() spec.Ref {
	return spec.Ref{APIVersion: "etcd.database.coreos.com/v1beta2", Kind: "EtcdCluster", Name: c.name}
}
func (fleetCluster) Source() *spec.Source { return nil }
func (fleetCluster) Common() spec.Common  { return spec.Common{} }
func fleetName(i int) string              { return fmt.Sprintf("c%03d", i) }
func fleetBranch(i int) string            { return publish.Branch(fleetName(i), "etcd-add-3") }
func fleetRender(c spec.Cluster, p plan.Plan, step string) (renderer.Tree, renderer.Built, error) {
	name := c.Ref().Name
	manifest := fmt.Sprintf("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: %s\nspec:\n  replicas: 4\n", name)
	pj, _ := json.Marshal(p)
	tree := renderer.Tree{renderer.Root(name) + "/kustomization.yaml": []byte("resources: [" + renderer.StepDir(step) + "]\n"),
		renderer.Root(name) + "/plan.json": pj, renderer.Root(name) + "/" + renderer.StepDir(step) + "/statefulset.yaml": []byte(manifest)}
	return tree, renderer.Built{Base: []byte(strings.Replace(manifest, "replicas: 4", "replicas: 3", 1)), Selected: []byte(manifest)}, nil
}

// fleet is a GitOps repo of n etcd clusters, each scaling out, published
// by one long-lived provider and clone, as cairn reconcile does.
type fleet struct {
	t      *testing.T
	f      *githubtest.Server
	bare   string
	p      *Provider
	pub    *publish.Publisher
	repo   *gitrepo.Repo
	specs  []spec.Cluster
	plans  plan.List
	waits  map[string]string // a cluster's gate that does not hold, and why
	before Counts
}

func newFleet(t *testing.T, n int) *fleet {
	fl := &fleet{t: t, f: githubtest.New(t), bare: bareRepo(t), waits: map[string]string{}}
	fl.f.UseRepo(fl.bare)
	fl.f.RequiredContexts = []string{publish.CheckContext}
	fl.p, _ = newProvider(t, fl.f.URL, fl.f.Token)
	var err error
	if fl.repo, err = gitrepo.Clone(context.Background(), gitrepo.Remote{URL: fl.bare}, filepath.Join(t.TempDir(), "w")); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fleetName(i)
		fl.specs = append(fl.specs, fleetCluster{name})
		ref := plan.ClusterRef{APIVersion: "etcd.database.coreos.com/v1beta2", Kind: "EtcdCluster", Name: name}
		fl.plans.Plans = append(fl.plans.Plans, plan.Plan{Cluster: ref, ID: "plan-" + name, Status: plan.StatusPlanned,
			SpecFingerprint: "sha256:spec", ObservedFingerprint: "sha256:observed",
			Steps: []plan.Step{{ID: "etcd-add-3", Kind: plan.EtcdAddMember, Summary: "Add " + name + "-3 as a learner", Reversible: true,
				Gates: []plan.Gate{{Kind: plan.GateClusterHealthy, When: plan.Before, Description: "every member is ready"},
					{Kind: plan.GateMemberVoter, When: plan.After, Member: name + "-3", Description: name + "-3 votes"}}}}})
	}
	fl.pub = &publish.Publisher{Repo: fl.repo, PRs: fl.p, Render: fleetRender, Name: "cairn", Email: "c@x",
		Gates: func(pl plan.Plan) (bool, string) {
			why, down := fl.waits[pl.Cluster.Name]
			return !down, why
		}}
	return fl
}

// pass is one pass of the loop; it returns the calls it made.
func (fl *fleet) pass(what string) Counts {
	fl.t.Helper()
	ctx := context.Background()
	if err := fl.repo.Fetch(ctx); err != nil {
		fl.t.Fatal(err)
	}
	if err := fl.repo.CheckoutBase(); err != nil {
		fl.t.Fatal(err)
	}
	base, err := fl.repo.Base()
	if err != nil {
		fl.t.Fatal(err)
	}
	if _, err := fl.pub.Publish(ctx, base, fl.specs, fl.plans); err != nil {
		fl.t.Fatalf("%s: %v", what, err)
	}
	c := fl.p.Counts()
	d := Counts{Reads: c.Reads - fl.before.Reads, Writes: c.Writes - fl.before.Writes, NotModified: c.NotModified - fl.before.NotModified}
	fl.before = c
	fl.t.Logf("API calls for %s: %d reads (%d answered 304), %d writes", what, d.Reads, d.NotModified, d.Writes)
	return d
}

// merge merges pull request n through the API as a person would.
func (fl *fleet) merge(n int) (int, string) {
	fl.t.Helper()
	pr := fl.f.PRs[n-1]
	body, _ := json.Marshal(map[string]string{"sha": fl.f.HeadSHA(pr.Head.Ref)})
	req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/repos/o/r/pulls/%d/merge", fl.f.URL, n), bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+fl.f.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fl.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Message string }
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Message
}

func (fl *fleet) status(i int) map[string]string {
	return fl.f.Statuses[fl.f.HeadSHA(fleetBranch(i))]
}

// The API calls of a pass, in a fleet of 100 clusters with a pull request
// open each: writes only to the pull requests whose step changed.
func TestWritesFollowChangesInAFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 100 clusters")
	}
	const n = 100
	fl := newFleet(t, n)
	c := fl.pass("opening 100 steps")
	if len(fl.f.Open()) != n || c.Writes != 3*n {
		t.Fatalf("%d open, %d writes; want %d pull requests of 3 writes each (status, create, labels)", len(fl.f.Open()), c.Writes, n)
	}
	if st := fl.status(7); st["state"] != "success" {
		t.Fatalf("status %v", st)
	}
	// The first pass after writes reads what they changed; the next is a 304.
	if c := fl.pass("a no-op pass after the opening"); c.Writes != 0 || c.Reads != 1 {
		t.Errorf("a no-op pass: %+v, want 1 read and no write", c)
	}
	if c := fl.pass("a no-op pass"); c.Writes != 0 || c.Reads != 1 || c.NotModified != 1 {
		t.Errorf("a no-op pass: %+v, want 1 read answered 304 and no write", c)
	}

	setSpec(t, fl.bare, etcdSpec+"# a comment\n") // a commit to the base elsewhere
	if c := fl.pass("a commit elsewhere in the repo"); c.Writes != 0 {
		t.Errorf("a commit elsewhere wrote %d times", c.Writes)
	}

	if code, msg := fl.merge(43); code != http.StatusOK {
		t.Fatalf("merge #43: %d %s", code, msg)
	}
	if c := fl.pass("a merge elsewhere (#43), 99 open"); c.Writes != 0 {
		t.Errorf("a merge elsewhere wrote %d times to the other pull requests", c.Writes)
	}

	fl.waits["c007"] = "c007-1 is not ready"
	if c := fl.pass("a gate flipping to waiting"); c.Writes != 2 {
		t.Errorf("a gate flipping: %d writes, want 2 (status, body)", c.Writes)
	}
	if st := fl.status(7); st["state"] != "pending" || st["description"] != "waits for every member is ready: c007-1 is not ready" {
		t.Errorf("status of c007: %v", st)
	}
	if code, msg := fl.merge(8); code != http.StatusMethodNotAllowed || msg != `Required status check "cairn/plan" is expected.` {
		t.Errorf("a person merging while the gate waits: %d %s", code, msg)
	}
	if !strings.Contains(fl.f.PRs[7].Body, "- ⏳ every member is ready (not yet: c007-1 is not ready)") {
		t.Errorf("body of c007:\n%s", fl.f.PRs[7].Body)
	}
	if c := fl.pass("the gate still waiting"); c.Writes != 0 {
		t.Errorf("a gate still waiting wrote %d times", c.Writes)
	}
	delete(fl.waits, "c007")
	if c := fl.pass("the gate flipping back"); c.Writes != 2 || fl.status(7)["state"] != "success" {
		t.Errorf("the gate back: %d writes, status %v", c.Writes, fl.status(7))
	}
	if code, msg := fl.merge(8); code != http.StatusOK {
		t.Errorf("a person merging once the gate holds: %d %s", code, msg)
	}
}
