package githubpr

import (
	"context"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// hub is the GitOps repo behind the GitHub test server, with one provider
// living across passes as in the reconcile loop, and the live state the
// planner sees.
type hub struct {
	t     *testing.T
	f     *githubtest.Server
	bare  string
	p     *Provider
	live  string
	pols  policies.Set
	gates func(plan.Plan) (bool, string)
}

func newHub(t *testing.T, specDoc string) *hub {
	t.Helper()
	f := githubtest.New(t)
	bare := bareRepo(t)
	f.UseRepo(bare)
	if specDoc != etcdSpec {
		setSpec(t, bare, specDoc)
	}
	p, _ := newProvider(t, f.URL, f.Token)
	return &hub{t: t, f: f, bare: bare, p: p}
}

// one is the outcome for cluster e of a pass that must not fail; the zero
// Outcome when nothing was planned for it.
func (h *hub) one() publish.Outcome {
	h.t.Helper()
	out, err := publishMerging(h.t, h.bare, h.p, h.live, h.pols, h.gates)
	if err != nil {
		h.t.Fatalf("pass: %v (%+v)", err, out)
	}
	for _, o := range out {
		if o.Cluster == "EtcdCluster/e" {
			return o
		}
	}
	return publish.Outcome{}
}

// merge merges the open pull request of branch through the API, as a
// person pressing the button.
func (h *hub) merge(branch string) {
	h.t.Helper()
	for _, pr := range h.f.Open() {
		if pr.Head.Ref == branch {
			if _, err := h.p.Merge(context.Background(), publish.PullRequest{Number: pr.Number, Branch: branch, Head: h.f.HeadSHA(branch)}); err != nil {
				h.t.Fatal(err)
			}
			return
		}
	}
	h.t.Fatalf("no open pull request for %s", branch)
}

// walk: see the local provider's walk in package publish.
func (h *hub) walk(steps []string, lives []string) {
	h.t.Helper()
	for i, step := range steps {
		h.live = lives[i]
		o := h.one()
		if o.Action != publish.ActionOpened || o.Step != step {
			h.t.Fatalf("step %d: %+v, want %s opened", i, o, step)
		}
		h.merge(o.Branch)
		if o = h.one(); o.Action != publish.ActionMerged || o.Step != step {
			h.t.Fatalf("after merging %s: %+v, want it merged and waiting", step, o)
		}
	}
	h.live = lives[len(steps)]
	if o := h.one(); o.Status != plan.StatusConverged {
		h.t.Fatalf("after %v: %+v, want converged", steps, o)
	}
}

// pullRequests counts the pull requests of each branch, and checks that
// none is open.
func (h *hub) pullRequests() map[string]int {
	out := map[string]int{}
	for _, pr := range h.f.PRs {
		out[pr.Head.Ref]++
		if pr.State != "closed" || !pr.Merged {
			h.t.Errorf("#%d %s is %s, merged %v", pr.Number, pr.Head.Ref, pr.State, pr.Merged)
		}
	}
	return out
}

// Each recurring cycle of a step opens exactly one new pull request on
// GitHub, next to the merged one of the cycle before; within a cycle a
// merged step waits for the live state and opens nothing.
func TestARecurringStepGetsANewPullRequest(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		cycles func(h *hub)
		want   map[string]int
	}{
		{"scale 3 -> 5 -> 3 -> 5", testbed.EtcdSpec(5, "3.5.21", ""), func(h *hub) {
			out := []string{testbed.EtcdLive(3, "3.5.21", false, ""), testbed.EtcdLive(4, "3.5.21", false, ""), testbed.EtcdLive(5, "3.5.21", false, "")}
			h.walk([]string{"etcd-add-3", "etcd-add-4"}, out)
			setSpec(h.t, h.bare, testbed.EtcdSpec(3, "3.5.21", ""))
			h.walk([]string{"etcd-remove-4", "scale-in-4", "etcd-remove-3", "scale-in-3"}, []string{testbed.EtcdLive(5, "3.5.21", false, ""),
				testbed.EtcdLive(5, "3.5.21", true, ""), testbed.EtcdLive(4, "3.5.21", false, ""), testbed.EtcdLive(4, "3.5.21", true, ""), testbed.EtcdLive(3, "3.5.21", false, "")})
			setSpec(h.t, h.bare, testbed.EtcdSpec(5, "3.5.21", ""))
			h.walk([]string{"etcd-add-3", "etcd-add-4"}, out)
		}, map[string]int{"cairn/e/etcd-add-3": 2, "cairn/e/etcd-add-4": 2, "cairn/e/etcd-remove-4": 1, "cairn/e/scale-in-4": 1, "cairn/e/etcd-remove-3": 1, "cairn/e/scale-in-3": 1}},
		{"upgrade, revert, upgrade again", testbed.EtcdSpec(1, "3.5.21", ""), func(h *hub) {
			up := []string{testbed.EtcdLive(1, "3.5.20", false, ""), testbed.EtcdLive(1, "3.5.21", false, "")}
			h.walk([]string{"upgrade-0-to-3.5.21"}, up)
			setSpec(h.t, h.bare, testbed.EtcdSpec(1, "3.5.20", ""))
			h.walk([]string{"upgrade-0-to-3.5.20"}, []string{up[1], up[0]})
			setSpec(h.t, h.bare, testbed.EtcdSpec(1, "3.5.21", ""))
			h.walk([]string{"upgrade-0-to-3.5.21"}, up)
		}, map[string]int{"cairn/e/upgrade-0-to-3.5.21": 2, "cairn/e/upgrade-0-to-3.5.20": 1}},
		{"delete and re-create the cluster", testbed.EtcdSpec(3, "3.5.21", ""), func(h *hub) {
			born := []string{testbed.NoLive, testbed.EtcdLive(3, "3.5.21", false, "  bootstrap: new\n"), testbed.EtcdLive(3, "3.5.21", false, "")}
			h.walk([]string{"create", "seal-bootstrap"}, born)
			gitbed.Commit(h.t, h.bare, map[string]string{"clusters/e.yaml": "", "rendered/e": "", "clusters/README.md": "specs\n"})
			h.live = testbed.NoLive
			if o := h.one(); o.Action != "" {
				h.t.Fatalf("a deleted cluster: %+v", o)
			}
			gitbed.Commit(h.t, h.bare, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(3, "3.5.21", "")})
			h.walk([]string{"create", "seal-bootstrap"}, born)
		}, map[string]int{"cairn/e/create": 2, "cairn/e/seal-bootstrap": 2}},
	}
	// GitHub keeps a merged pull request's branch unless the repo deletes
	// head branches; a merge commit holds the head, a squash does not.
	repos := []struct {
		name, method   string
		deleteBranches bool
	}{{"merge, branches kept", "merge", false}, {"merge, branches deleted", "merge", true},
		{"squash, branches kept", "squash", false}, {"squash, branches deleted", "squash", true}}
	for _, tc := range tests {
		for _, repo := range repos {
			t.Run(tc.name+"/"+repo.name, func(t *testing.T) {
				h := newHub(t, tc.spec)
				h.f.DeleteBranchOnMerge, h.p.MergeMethod = repo.deleteBranches, repo.method
				h.cycle(tc.cycles, tc.want)
			})
		}
	}
}

// cycle runs cycles and checks the pull requests of each branch.
func (h *hub) cycle(cycles func(h *hub), want map[string]int) {
	h.t.Helper()
	cycles(h)
	got := h.pullRequests()
	for branch, n := range want {
		if got[branch] != n {
			h.t.Errorf("%s: %d pull requests, want %d (all: %v)", branch, got[branch], n, got)
		}
	}
}

// A pull request a person closed on GitHub declines its step for the
// cycle only.
func TestADeclinedStepOnGitHubComesBackInALaterCycle(t *testing.T) {
	h := newHub(t, testbed.EtcdSpec(5, "3.5.21", ""))
	h.live = testbed.EtcdLive(3, "3.5.21", false, "")
	if o := h.one(); o.Action != publish.ActionOpened {
		t.Fatalf("%+v", o)
	}
	h.f.PRs[0].State = "closed" // a person closed it
	if o := h.one(); o.Action != publish.ActionDeclined {
		t.Fatalf("declined: %+v", o)
	}
	setSpec(t, h.bare, testbed.EtcdSpec(3, "3.5.21", ", storage: 10Gi"))
	h.walk([]string{"expand-storage-10gi"}, []string{h.live, strings.Replace(h.live, "storage: 8Gi", "storage: 10Gi", 1)})
	setSpec(t, h.bare, testbed.EtcdSpec(5, "3.5.21", ", storage: 10Gi"))
	if o := h.one(); o.Action != publish.ActionOpened || o.Step != "etcd-add-3" || len(h.f.Open()) != 1 || h.f.Open()[0].Number != 3 {
		t.Fatalf("in the next cycle: %+v %+v", o, h.f.Open())
	}
}

// A step whose pull request cannot be opened in a pass still supersedes
// the open pull request of the step before it: that one is closed in the
// same pass (it must not keep a green cairn/plan), the step's cluster
// fails, and a later pass opens the step.
func TestASupersededPullRequestIsClosedWhenTheNextCannotBeOpened(t *testing.T) {
	for _, failAt := range []string{"POST /repos/o/r/pulls", "POST /repos/o/r/statuses/"} {
		t.Run(failAt, func(t *testing.T) {
			h := newHub(t, testbed.EtcdSpec(5, "3.5.21", ""))
			h.live = testbed.EtcdLive(3, "3.5.21", false, "")
			if o := h.one(); o.Action != publish.ActionOpened || o.Step != "etcd-add-3" {
				t.Fatalf("%+v", o)
			}
			setSpec(t, h.bare, testbed.EtcdSpec(3, "3.5.21", ", storage: 10Gi"))
			h.f.FailAt = failAt
			out, err := publishMerging(t, h.bare, h.p, h.live, nil, nil)
			if err == nil || len(out) != 1 || out[0].Action != publish.ActionFailed || out[0].Step != "expand-storage-10gi" {
				t.Fatalf("the failing pass: %+v %v", out, err)
			}
			if len(out[0].Closed) != 1 || out[0].Closed[0] != "cairn/e/etcd-add-3" || h.f.PRs[0].State != "closed" || len(h.f.Open()) != 0 {
				t.Fatalf("the superseded pull request: closed %v, %+v", out[0].Closed, h.f.PRs[0])
			}
			if o := h.one(); o.Action != publish.ActionOpened || o.Step != "expand-storage-10gi" || len(h.f.Open()) != 1 {
				t.Fatalf("the next pass: %+v, open %d", o, len(h.f.Open()))
			}
		})
	}
}
