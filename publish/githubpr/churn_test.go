package githubpr

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
)

// clockedPass is one reconcile pass at now: the policies decide at now,
// the step is gated on a fresh backup (as a major upgrade is) and its
// gates are checked at now, through a provider living across passes.
func clockedPass(t *testing.T, bare string, p *Provider, liveDoc, policyDoc string, now time.Time) []publish.Outcome {
	t.Helper()
	ctx := context.Background()
	repo, err := gitrepo.Clone(ctx, gitrepo.Remote{URL: bare}, filepath.Join(t.TempDir(), "w"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := renderer.New(renderer.Options{}, renderer.Etcd(), renderer.Postgres())
	base, _ := repo.Base()
	clusters, err := spec.LoadRepo(repo.Dir(), spec.DefaultLayout)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := live.Decode("live.yaml", []byte(liveDoc))
	if err != nil {
		t.Fatal(err)
	}
	pols, err := policies.Load("p.yaml", []byte(policyDoc), now)
	if err != nil {
		t.Fatal(err)
	}
	plans := planner.New(planner.Etcd(), planner.Postgres()).Plan(clusters, obs, pols)
	for i := range plans.Plans {
		if pl := &plans.Plans[i]; len(pl.Steps) > 0 {
			pl.Steps[0].Gates = append(pl.Steps[0].Gates, plan.Gate{Kind: plan.GateBackupFresh, When: plan.Before, MaxAge: "6h",
				Description: "a verified backup younger than 6h exists"})
		}
	}
	pub := &publish.Publisher{Repo: repo, PRs: p, Render: r.Render, Name: "cairn", Email: "c@x", Now: func() time.Time { return now }}
	pub.Gates = func(pl plan.Plan) (bool, string) {
		return gates.Pass(gates.Before(pl.Steps[0], clusters[0], obs.Find(pl.Cluster.Kind, pl.Cluster.Name), now))
	}
	out, err := pub.Publish(ctx, base, clusters, plans)
	if err != nil {
		t.Fatalf("pass at %s: %v (%+v)", now, err, out)
	}
	return out
}

// An unchanged cluster under a backupFreshness policy, passed over once a
// minute, costs nothing after its first pass: no push and no write to
// GitHub, its backup fresh or stale, as the backup ages (the plan, the
// body and the status say no age). One status is written on the head.
func TestTenPassesOfAnUnchangedClusterWriteNothing(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	policy := "apiVersion: cairn.dev/v1alpha1\nkind: Policy\nmetadata: {name: prod}\nspec:\n  backupFreshness: {maxAge: 6h, kinds: [EtcdAddMember]}\n"
	tests := []struct {
		name   string
		backup time.Time
		state  string // of the cairn/plan status
	}{
		{"a fresh backup", start.Add(-time.Hour), "success"},
		{"a stale backup: held, its gate failing", start.Add(-7 * time.Hour), "pending"},
		{"a backup that is fresh to the minute", start.Add(-6*time.Hour + 10*time.Minute), "success"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := githubtest.New(t)
			bare := bareRepo(t)
			f.UseRepo(bare)
			p, _ := newProvider(t, f.URL, f.Token)
			liveDoc := testbed.EtcdLive(3, "3.5.21", false, "  backup: {lastSuccessful: \""+tc.backup.Format(time.RFC3339)+"\"}\n")
			out := clockedPass(t, bare, p, liveDoc, policy, start)
			if len(out) != 1 || out[0].Action != publish.ActionOpened {
				t.Fatalf("first pass: %+v", out)
			}
			head := f.HeadSHA(out[0].Branch)
			if st := f.Statuses[head]; st["state"] != tc.state {
				t.Fatalf("status %v, want %s", st, tc.state)
			}
			first := p.Counts()
			for i := 1; i <= 10; i++ {
				out := clockedPass(t, bare, p, liveDoc, policy, start.Add(time.Duration(i)*time.Minute))
				if out[0].Action != publish.ActionUnchanged {
					t.Errorf("pass %d: %+v, want unchanged", i, out[0])
				}
			}
			if got := f.HeadSHA(out[0].Branch); got != head {
				t.Errorf("the branch was pushed: %s, then %s", head, got)
			}
			if c := p.Counts(); c.Writes != first.Writes {
				t.Errorf("writes over 10 passes: %d, want 0 (%+v after %+v)", c.Writes-first.Writes, c, first)
			}
			if n := f.StatusCount(head, publish.CheckContext); n != 1 {
				t.Errorf("%d statuses on the head, want 1", n)
			}
		})
	}
}

// A status is written only when it says something new on the head.
func TestStatusDue(t *testing.T) {
	green := publish.Check{State: "success", Description: "step s of plan p is ready for review"}
	held := publish.Check{State: "pending", Description: "held by prod/backup-freshness: the last backup, taken at T, is older than 6h"}
	pr := func(head string, c publish.Check) publish.PullRequest {
		return publish.PullRequest{Number: 1, Head: head, Check: c}
	}
	tests := []struct {
		name      string
		old       publish.PullRequest
		known     bool
		want      publish.PullRequest
		textMoved bool
		due       bool
	}{
		{"unknown pull request", publish.PullRequest{}, false, pr("a", green), true, true},
		{"a new head", pr("a", green), true, pr("b", green), false, true},
		{"the same status, the body changed", pr("a", green), true, pr("a", green), true, false},
		{"the same status, nothing changed", pr("a", held), true, pr("a", held), false, false},
		{"another state", pr("a", green), true, pr("a", held), true, true},
		{"another description", pr("a", held), true, pr("a", publish.Check{State: "pending", Description: "waits for e-1 is ready"}), false, true},
		{"known from a list only, the text changed", pr("a", publish.Check{}), true, pr("a", green), true, true},
		{"known from a list only, nothing changed", pr("a", publish.Check{}), true, pr("a", green), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusDue(tc.old, tc.known, tc.want, tc.textMoved); got != tc.due {
				t.Errorf("statusDue = %v, want %v", got, tc.due)
			}
		})
	}
}

// GitHub keeps at most 1,000 statuses of a commit and context, and so
// does the test server; an update of the body alone writes none.
func TestStatusesStayFarFromGitHubsCap(t *testing.T) {
	ctx := context.Background()
	f := githubtest.New(t)
	p, err := New("o", "r", "main", Options{BaseURL: f.URL, Token: f.Token, WriteSpacing: -1, WritesPerHour: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := want("cairn/db/s")
	w.Head, w.Check = "abc", publish.Check{State: "pending", Description: "held"}
	opened, err := p.Open(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		opened.Body = "body " + string(rune('a'+i))
		if err := p.Update(ctx, *opened); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.StatusCount("abc", publish.CheckContext); n != 1 {
		t.Errorf("%d statuses after 5 body updates, want 1", n)
	}
	opened.Check = publish.Check{State: "success", Description: "ready"}
	if err := p.Update(ctx, *opened); err != nil || f.StatusCount("abc", publish.CheckContext) != 2 {
		t.Fatalf("a new state: %v, %d statuses", err, f.StatusCount("abc", publish.CheckContext))
	}
	for i := 2; i < githubtest.MaxStatuses; i++ {
		if err := p.status(ctx, *opened); err != nil {
			t.Fatalf("status %d: %v", i+1, err)
		}
	}
	if err := p.status(ctx, *opened); err == nil || !strings.Contains(err.Error(), "422") || !strings.Contains(err.Error(), "maximum number of statuses") {
		t.Fatalf("status %d: %v, want GitHub's 422", githubtest.MaxStatuses+1, err)
	}
}
