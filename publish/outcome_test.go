package publish

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/testbed"
)

// outcomeWorld is a world whose passes note outcomes: done says whether
// the merged step's "after" gates hold.
type outcomeWorld struct {
	*world
	done bool
	now  time.Time
	// asked counts the gates After was asked about, one at a time.
	asked int
}

func (w *outcomeWorld) pass() []Outcome {
	w.t.Helper()
	ctx := context.Background()
	base, clusters, obs := w.state(ctx)
	pub := &Publisher{Repo: w.repo, PRs: w.prs, Render: w.rend.Render, Name: "cairn", Email: cairnEmail,
		Live: func(ref plan.ClusterRef) *live.Cluster { return obs.Find(ref.Kind, ref.Name) },
		After: func(_ plan.ClusterRef, s plan.Step) (bool, string) {
			if len(s.Gates) != 1 {
				w.t.Fatalf("asked about %d gates at once", len(s.Gates))
			}
			w.asked++
			return w.done, "e-3 is a learner still"
		},
		Now: func() time.Time { return w.now }}
	out, err := pub.Publish(ctx, base, clusters, planner.New(planner.Etcd(), planner.Postgres()).Plan(clusters, obs, nil))
	if err != nil {
		w.t.Fatalf("pass: %v", err)
	}
	return out
}

func (w *outcomeWorld) pr(step string) PullRequest {
	w.t.Helper()
	local, ok := w.prs.(*Local)
	if f, isFlaky := w.prs.(*flakyBody); isFlaky {
		local, ok = f.Local, true
	}
	if !ok {
		w.t.Fatal("not the local provider")
	}
	pr, err := local.Find(context.Background(), Branch("e", step))
	if err != nil || pr == nil {
		w.t.Fatalf("%s: %v %v", step, pr, err)
	}
	return *pr
}

func (w *outcomeWorld) comments(step string) []string {
	w.t.Helper()
	cs, err := w.prs.(Commenter).Comments(context.Background(), w.pr(step))
	if err != nil {
		w.t.Fatal(err)
	}
	return cs
}

// The merged step's pull request gets one comment with its outcome once
// its gates hold and the next step is published, or the plan is done;
// its "Done when" list then shows the results. Passes after that, and a
// new process, post nothing more.
func TestTheOutcomeIsPostedOnceOnTheMergedPullRequest(t *testing.T) {
	w := &outcomeWorld{world: newWorld(t, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(5, "3.5.21", "")}),
		now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	w.live = testbed.EtcdLive(3, "3.5.21", false, "")
	if out := w.pass(); out[0].Action != ActionOpened || out[0].Step != "etcd-add-3" {
		t.Fatalf("%+v", out)
	}
	body := w.pr("etcd-add-3").Body
	for _, want := range []string{"| e-0 | leader | 3.5.21 | yes |", "- **Pods that restart:** none", "outcome=pending -->"} {
		if !strings.Contains(body, want) {
			t.Errorf("the body lacks %q:\n%s", want, body)
		}
	}
	w.merge(Branch("e", "etcd-add-3"))
	if out := w.pass(); out[0].Action != ActionMerged || len(w.comments("etcd-add-3")) != 0 {
		t.Fatalf("merged, not done: %+v", out)
	}
	// The next step opens (no hold here) while the gates do not hold
	// yet: no outcome.
	w.live = testbed.EtcdLive(4, "3.5.21", false, "")
	if out := w.pass(); out[0].Action != ActionOpened || out[0].Step != "etcd-add-4" || len(w.comments("etcd-add-3")) != 0 {
		t.Fatalf("next opened, not done: %+v", out)
	}
	if next := w.pr("etcd-add-4").Body; !strings.Contains(next, "- **Previous step:** `cairn/e/etcd-add-3` (merged)") {
		t.Errorf("the next step's body does not name the previous one:\n%s", next)
	}
	w.done, w.now = true, w.now.Add(5*time.Minute)
	for pass := range 3 {
		if out := w.pass(); out[0].Action != ActionUnchanged {
			t.Fatalf("pass %d: %+v", pass, out)
		}
		cs := w.comments("etcd-add-3")
		if len(cs) != 1 {
			t.Fatalf("pass %d: %d outcome comments, want 1: %q", pass, len(cs), cs)
		}
		for _, want := range []string{"**cairn: step `etcd-add-3` is done.**", "- **Merged:** the provider keeps no merge time",
			"- **Done:** every gate held at 2026-03-01T12:05:00Z", "- **Next step:** `cairn/e/etcd-add-4`",
			"**Done when:**\n- ✅ e-3 is ready (held at 2026-03-01T12:05:00Z)\n- ✅ e-3 caught up and was promoted to a voter (held at", "<!-- cairn outcome head="} {
			if !strings.Contains(cs[0], want) {
				t.Errorf("the outcome lacks %q:\n%s", want, cs[0])
			}
		}
		merged := w.pr("etcd-add-3").Body
		if !strings.Contains(merged, "- ✅ e-3 caught up and was promoted to a voter (held at 2026-03-01T12:05:00Z)") ||
			!strings.Contains(merged, "outcome=posted -->") || strings.Contains(merged, "outcome=pending") {
			t.Errorf("the merged body's done-when list:\n%s", merged)
		}
		w.now = w.now.Add(time.Minute)
	}
	// The last step: its outcome comes once the plan is done.
	w.merge(Branch("e", "etcd-add-4"))
	w.live = testbed.EtcdLive(5, "3.5.21", false, "")
	if out := w.pass(); out[0].Status != plan.StatusConverged {
		t.Fatalf("%+v", out)
	}
	if cs := w.comments("etcd-add-4"); len(cs) != 1 || !strings.Contains(cs[0], "the plan is done") {
		t.Fatalf("the last step's outcome: %q", cs)
	}
	if len(w.comments("etcd-add-3")) != 1 {
		t.Error("the earlier step got another comment")
	}
}

// flakyBody fails the first SetBody, as a run that dies between the
// comment and the body leaves things.
type flakyBody struct {
	*Local
	failed bool
}

func (f *flakyBody) SetBody(ctx context.Context, pr PullRequest, body string) error {
	if !f.failed {
		f.failed = true
		return errors.New("killed")
	}
	return f.Local.SetBody(ctx, pr, body)
}

// A run that posted the comment but died before the body does not post it
// again: the next pass finds the comment's marker and writes the body.
func TestAnOutcomeCommentSurvivesARunThatDiedBeforeTheBody(t *testing.T) {
	w := &outcomeWorld{world: newWorld(t, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(5, "3.5.21", "")}), done: true,
		now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	local := w.prs.(*Local)
	w.prs = &flakyBody{Local: local}
	w.live = testbed.EtcdLive(3, "3.5.21", false, "")
	w.pass()
	w.merge(Branch("e", "etcd-add-3"))
	w.live = testbed.EtcdLive(4, "3.5.21", false, "")
	w.pass() // opens etcd-add-4, posts the comment, fails the body
	if cs := w.comments("etcd-add-3"); len(cs) != 1 || footerSays(w.pr("etcd-add-3").Body) != outcomePending {
		t.Fatalf("after the failed body: %d comments, footer %q", len(cs), footerSays(w.pr("etcd-add-3").Body))
	}
	w.pass()
	if cs := w.comments("etcd-add-3"); len(cs) != 1 || footerSays(w.pr("etcd-add-3").Body) != outcomePosted {
		t.Fatalf("after the repair: %d comments, footer %q", len(cs), footerSays(w.pr("etcd-add-3").Body))
	}
}

func TestOutcomeTimes(t *testing.T) {
	s := plan.Step{ID: "x", Gates: []plan.Gate{{When: plan.After, Description: "a <b>"}}}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	o := outcome{step: s, head: "h", mergedAt: at, done: at.Add(4*time.Minute + 10*time.Second + 300*time.Millisecond),
		results: []GateState{{Gate: s.Gates[0], Holds: true}}, next: &PullRequest{Number: 8, Branch: "cairn/e/y"}}
	c := o.comment()
	for _, want := range []string{"- **Merged:** 2026-03-01T12:00:00Z\n", "held at 2026-03-01T12:04:10Z, 4m10s after the merge", "- **Next step:** #8 `y`", "- ✅ a \\<b> (held at"} {
		if !strings.Contains(c, want) {
			t.Errorf("comment lacks %q:\n%s", want, c)
		}
	}
	if footerSays("x\n<!-- cairn cluster=K/e step=x plan=p -->\n") != "" || footerSays("\n<!-- cairn cluster=K/e step=x plan=p outcome=pending -->\n<!-- cairn closed -->\n") != outcomePending {
		t.Error("footer states")
	}
}
