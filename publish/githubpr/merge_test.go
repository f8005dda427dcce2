package githubpr

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
)

// setStatus sets the cairn/plan status of sha through the API.
func setStatus(t *testing.T, f *githubtest.Server, sha, state string) {
	t.Helper()
	p, _ := newProvider(t, f.URL, f.Token)
	if err := p.status(context.Background(), publish.PullRequest{Head: sha, Check: publish.Check{State: state}}); err != nil {
		t.Fatal(err)
	}
}

func TestMergeAnswers(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f *githubtest.Server, pr *publish.PullRequest)
		method  string
		refused string // "" when merged
	}{
		{"merged", func(*githubtest.Server, *publish.PullRequest) {}, "", ""},
		{"squash", func(*githubtest.Server, *publish.PullRequest) {}, "squash", ""},
		{"required status missing", func(f *githubtest.Server, _ *publish.PullRequest) {
			f.RequiredContexts = []string{publish.CheckContext}
		}, "", `405 for #1: Required status check "cairn/plan" is expected.`},
		{"required status pending", func(f *githubtest.Server, pr *publish.PullRequest) {
			f.RequiredContexts = []string{publish.CheckContext}
			setStatus(t, f, pr.Head, "pending")
		}, "", `405 for #1: Required status check "cairn/plan" is expected.`},
		{"required status failing", func(f *githubtest.Server, pr *publish.PullRequest) {
			f.RequiredContexts = []string{publish.CheckContext, "ci"}
			setStatus(t, f, pr.Head, "failure")
		}, "", `405 for #1: Required status check "cairn/plan" is failing.`},
		{"required statuses green", func(f *githubtest.Server, pr *publish.PullRequest) {
			f.RequiredContexts = []string{publish.CheckContext}
			setStatus(t, f, pr.Head, "success")
		}, "", ""},
		{"method not allowed", func(f *githubtest.Server, _ *publish.PullRequest) { f.MergeMethods = []string{"squash"} }, "rebase", "405"},
		{"a person pushed", func(_ *githubtest.Server, pr *publish.PullRequest) { pr.Head = "0000" }, "", "409"},
		{"closed", func(f *githubtest.Server, _ *publish.PullRequest) { f.PRs[0].State = "closed" }, "", "422"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := githubtest.New(t)
			p, _ := newProvider(t, f.URL, f.Token)
			p.MergeMethod = tc.method
			pr, err := p.Open(ctx, want("cairn/db/s"))
			if err != nil {
				t.Fatal(err)
			}
			pr.Head = f.PRs[0].Head.SHA
			tc.setup(f, pr)
			before := p.Counts()
			sha, err := p.Merge(ctx, *pr)
			// A refusal is noted on the pull request with what GitHub says
			// of it then: one read and one write more.
			writes := map[bool]int64{true: 1, false: 2}[tc.refused == ""]
			reads := map[bool]int64{true: 0, false: 1}[tc.refused == ""]
			if c := p.Counts(); c.Writes-before.Writes != writes || c.Reads-before.Reads != reads {
				t.Errorf("calls for one merge: %+v after %+v, want %d writes and %d reads", c, before, writes, reads)
			}
			if tc.refused == "" {
				if err != nil || sha == "" || f.PRs[0].State != "closed" || !f.PRs[0].Merged {
					t.Fatalf("merge: %q %v %+v", sha, err, f.PRs[0])
				}
				if got, _ := p.Find(ctx, "cairn/db/s"); got == nil || got.State != publish.Merged {
					t.Errorf("found %+v, want merged", got)
				}
				return
			}
			if !errors.Is(err, publish.ErrMergeRefused) || !strings.Contains(err.Error(), tc.refused) || f.PRs[0].Merged {
				t.Fatalf("err = %v, want a refusal with %s", err, tc.refused)
			}
			// GitHub's words are escaped in the note, as all text from elsewhere.
			if !strings.Contains(f.PRs[0].Body, "**Auto-merge refused:** GitHub answered "+strings.ReplaceAll(tc.refused, "#", `\#`)) {
				t.Fatalf("the refusal is not noted on the pull request:\n%s", f.PRs[0].Body)
			}
			// The pull request as the next pass lists it is not tried again
			// while GitHub says what it said: one conditional read.
			listed, _ := p.Find(ctx, "cairn/db/s")
			listed.Head = pr.Head
			before = p.Counts()
			if _, err := p.Merge(ctx, *listed); !errors.Is(err, publish.ErrMergeRefused) || p.Counts().Writes != before.Writes || p.Counts().Reads != before.Reads+1 {
				t.Errorf("a noted refusal is tried again: %v, calls %+v after %+v", err, p.Counts(), before)
			}
		})
	}
}

// A step outside its maintenance window, of a kind a policy lets cairn
// merge, gets a pull request with a pending status and no merge call; when
// the window opens its status turns green and cairn merges it, through
// branch protection that requires cairn/plan, in one write call.
func TestAutoMergeWaitsForTheWindowThroughBranchProtection(t *testing.T) {
	f := githubtest.New(t)
	bare := bareRepo(t)
	f.UseRepo(bare)
	f.RequiredContexts = []string{publish.CheckContext}
	setSpec(t, bare, "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec:\n  size: 1\n  version: \"3.5.21\"\n  maintenanceWindow: {schedule: \"0 22 * * *\", duration: 2h, timeZone: UTC}\n")
	one := "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: e\n  storage: 8Gi\n  network: restricted\n  tls: require\n  compaction: {mode: periodic, retention: 1h, applied: true}\n  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: 1, version: \"3.5.20\"}\n  members:\n  - {name: e-0, version: \"3.5.20\", ready: true, role: leader, tls: true, peerTLS: true}\n"
	merge := policies.AutoMerge{PolicyName: "all/auto-merge", Kinds: []plan.Kind{plan.UpgradeMember}}
	noon := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	gates := func(plan.Plan) (bool, string) { return true, "" }
	p, _ := newProvider(t, f.URL, f.Token)

	out, err := publishMerging(t, bare, p, one, policies.Set{policies.SpecWindow{Now: noon}, merge}, gates)
	if err != nil || out[0].Action != publish.ActionOpened || !strings.Contains(out[0].Note, "held by maintenance-window") {
		t.Fatalf("at noon: %+v %v", out, err)
	}
	open := f.Open()
	if len(open) != 1 || f.Statuses[open[0].Head.SHA]["state"] != "pending" || f.Calls["PUT /repos/o/r/pulls/1/merge"] != 0 {
		t.Fatalf("at noon: %+v %v %v", open, f.Statuses, f.Calls)
	}
	if !strings.Contains(open[0].Body, "**Auto-merge:** no: not while held by maintenance-window") {
		t.Errorf("body at noon:\n%s", open[0].Body)
	}

	before := p.Counts()
	out, err = publishMerging(t, bare, p, one, policies.Set{policies.SpecWindow{Now: noon.Add(10*time.Hour + 30*time.Minute)}, merge}, gates)
	if err != nil || out[0].Action != publish.ActionAutoMerged {
		t.Fatalf("in the window: %+v %v", out, err)
	}
	if f.Calls["PUT /repos/o/r/pulls/1/merge"] != 1 || len(f.Open()) != 0 {
		t.Fatalf("merge calls %v", f.Calls)
	}
	head := f.PRs[0].Head.SHA
	if f.Statuses[head]["state"] != "success" || !strings.Contains(f.PRs[0].Body, "**Auto-merge:** yes") {
		t.Errorf("status %v, body:\n%s", f.Statuses[head], f.PRs[0].Body)
	}
	// Status and body (the labels are the same), and the merge.
	if c := p.Counts(); c.Writes-before.Writes != 3 || c.Reads-before.Reads != 1 {
		t.Errorf("REST calls to turn the status green and merge: %+v after %+v", c, before)
	}
	if files := readMain(t, bare); !strings.Contains(files["rendered/e/kustomization.yaml"], "steps/upgrade-0-to-3.5.21") {
		t.Errorf("main after the merge: %v", files["rendered/e/kustomization.yaml"])
	}
}
