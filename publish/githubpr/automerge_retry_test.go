package githubpr

import (
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
)

// A refused merge is tried again only once GitHub says it can merge where
// it did not at the refusal.
func TestMergeAgain(t *testing.T) {
	tests := []struct {
		was, now string
		again    bool
	}{
		{"blocked", "blocked", false},
		{"blocked", "clean", true},
		{"blocked", "unstable", true},
		{"blocked", "has_hooks", true},
		{"blocked", "behind", false},
		{"blocked", "dirty", false},
		{"blocked", "unknown", false},
		{"unknown", "clean", true},
		{"", "clean", true}, // a note made before cairn noted states
		{"", "blocked", false},
		{"clean", "clean", false}, // refused while mergeable: a merge method not allowed
		{"unstable", "clean", true},
		{"draft", "clean", true},
		{"clean", "", false},
	}
	for _, tc := range tests {
		if got := mergeAgain(tc.was, tc.now); got != tc.again {
			t.Errorf("refused while %q, now %q: again %v, want %v", tc.was, tc.now, got, tc.again)
		}
	}
}

// ciStatus sets the status of another context on sha, as a CI system does.
func ciStatus(t *testing.T, f *githubtest.Server, sha, context, state string) {
	t.Helper()
	p, _ := newProvider(t, f.URL, f.Token)
	err := p.call(t.Context(), "ci status", func() (*github.Response, error) {
		_, resp, err := p.statuses.CreateStatus(t.Context(), p.Owner, p.Repo, sha, &github.RepoStatus{State: github.String(state), Context: github.String(context)})
		return resp, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Behind branch protection that wants another check or a review, GitHub
// refuses cairn's merge (405); the passes after cost no write while it
// still would, and once CI turns green or a reviewer approves, the next
// pass merges, its gates holding. A refusal no change on GitHub's side
// lifts (a merge method the repo does not allow) is not tried again.
func TestAutoMergeIsTriedAgainOnceGitHubCanMerge(t *testing.T) {
	tests := []struct {
		name    string
		protect func(f *githubtest.Server)
		lift    func(t *testing.T, f *githubtest.Server, pr *githubtest.PR)
		refused string
	}{
		{"another required check", func(f *githubtest.Server) { f.RequiredContexts = []string{publish.CheckContext, "ci"} },
			func(t *testing.T, f *githubtest.Server, pr *githubtest.PR) {
				ciStatus(t, f, pr.Head.SHA, "ci", "success")
			},
			`Required status check "ci" is expected.`},
		{"a failing check that turns green", func(f *githubtest.Server) { f.RequiredContexts = []string{"ci"} },
			func(t *testing.T, f *githubtest.Server, pr *githubtest.PR) {
				ciStatus(t, f, pr.Head.SHA, "ci", "success")
			},
			`Required status check "ci" is failing.`},
		{"a required review", func(f *githubtest.Server) { f.RequiredApprovals = 1 },
			func(t *testing.T, f *githubtest.Server, pr *githubtest.PR) { f.Approve(pr.Number) },
			"At least 1 approving review is required"},
		{"a check and two reviews", func(f *githubtest.Server) { f.RequiredContexts, f.RequiredApprovals = []string{"ci"}, 2 },
			func(t *testing.T, f *githubtest.Server, pr *githubtest.PR) {
				ciStatus(t, f, pr.Head.SHA, "ci", "success")
				f.Approve(pr.Number)
				f.Approve(pr.Number)
			},
			`Required status check "ci" is expected.`},
		{"a merge method the repo does not allow", func(f *githubtest.Server) { f.MergeMethods = []string{"squash"} }, nil, "merge merges are not allowed"},
	}
	merge := policies.AutoMerge{PolicyName: "all/auto-merge", Kinds: []plan.Kind{plan.UpgradeMember}}
	gates := func(plan.Plan) (bool, string) { return true, "" }
	one := "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: e\n  storage: 8Gi\n  network: restricted\n  tls: require\n  compaction: {mode: periodic, retention: 1h, applied: true}\n  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: 1, version: \"3.5.20\"}\n  members:\n  - {name: e-0, version: \"3.5.20\", ready: true, role: leader, tls: true, peerTLS: true}\n"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := githubtest.New(t)
			bare := bareRepo(t)
			f.UseRepo(bare)
			setSpec(t, bare, "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 1, version: \"3.5.21\"}\n")
			tc.protect(f)
			p, _ := newProvider(t, f.URL, f.Token)
			pols := policies.Set{merge}
			if tc.name == "a failing check that turns green" {
				out, err := publishMerging(t, bare, p, one, pols, nil) // opened, not merged yet
				if err != nil || out[0].Action != publish.ActionOpened {
					t.Fatalf("%+v %v", out, err)
				}
				ciStatus(t, f, f.PRs[0].Head.SHA, "ci", "failure")
			}
			out, err := publishMerging(t, bare, p, one, pols, gates)
			if err != nil || !strings.Contains(out[0].Note, "auto-merge refused") || !strings.Contains(f.PRs[0].Body, tc.refused) {
				t.Fatalf("the first try: %+v %v\n%s", out, err, f.PRs[0].Body)
			}
			puts := func() int { return f.Calls["PUT /repos/o/r/pulls/1/merge"] }
			if puts() != 1 {
				t.Fatalf("merge calls: %v", f.Calls)
			}
			// Passes while GitHub still refuses: no write, no merge call.
			before := p.Counts()
			for range 3 {
				out, err := publishMerging(t, bare, p, one, pols, gates)
				if err != nil || out[0].Action != publish.ActionUnchanged || !strings.Contains(out[0].Note, "auto-merge refused") {
					t.Fatalf("a pass while refused: %+v %v", out, err)
				}
			}
			if c := p.Counts(); c.Writes != before.Writes || puts() != 1 {
				t.Fatalf("passes while GitHub refuses: %+v after %+v, %d merge calls", c, before, puts())
			}
			if tc.lift == nil {
				return
			}
			tc.lift(t, f, f.PRs[0])
			out, err = publishMerging(t, bare, p, one, pols, gates)
			if err != nil || out[0].Action != publish.ActionAutoMerged || !f.PRs[0].Merged || puts() != 2 {
				t.Fatalf("once GitHub can merge: %+v %v, merged %v, %d merge calls", out, err, f.PRs[0].Merged, puts())
			}
		})
	}
}

// While the step's gates do not hold, a refused merge is not tried
// again, whatever GitHub says.
func TestARefusedMergeWaitsForTheGates(t *testing.T) {
	f := githubtest.New(t)
	bare := bareRepo(t)
	f.UseRepo(bare)
	setSpec(t, bare, "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 1, version: \"3.5.21\"}\n")
	f.RequiredApprovals = 1
	one := "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: e\n  storage: 8Gi\n  network: restricted\n  tls: require\n  compaction: {mode: periodic, retention: 1h, applied: true}\n  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: 1, version: \"3.5.20\"}\n  members:\n  - {name: e-0, version: \"3.5.20\", ready: true, role: leader, tls: true, peerTLS: true}\n"
	pols := policies.Set{policies.AutoMerge{PolicyName: "all/auto-merge", Kinds: []plan.Kind{plan.UpgradeMember}}}
	p, _ := newProvider(t, f.URL, f.Token)
	if out, err := publishMerging(t, bare, p, one, pols, func(plan.Plan) (bool, string) { return true, "" }); err != nil || !strings.Contains(out[0].Note, "auto-merge refused") {
		t.Fatalf("%+v %v", out, err)
	}
	f.Approve(1)
	out, err := publishMerging(t, bare, p, one, pols, func(plan.Plan) (bool, string) { return false, "e-0 is not ready" })
	if err != nil || out[0].Action == publish.ActionAutoMerged || f.Calls["PUT /repos/o/r/pulls/1/merge"] != 1 || !strings.Contains(out[0].Note, "auto-merge waits: e-0 is not ready") {
		t.Fatalf("gates failing: %+v %v %v", out, err, f.Calls)
	}
}
