package publish

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/planner/plan"
)

func bodyPlan() plan.Plan {
	return plan.Plan{
		Cluster: plan.ClusterRef{Kind: "EtcdCluster", Name: "e"}, ID: "0123456789ab", ObservedFingerprint: "sha256:abcdef0123456789",
		Steps: []plan.Step{
			{ID: "etcd-add-3", Kind: plan.EtcdAddMember, Summary: "Add e-3 | as a learner", Reversible: true, Rollback: "lower size",
				Gates: []plan.Gate{{Kind: plan.GateClusterHealthy, When: plan.Before, Description: "healthy"}, {Kind: plan.GateMemberVoter, When: plan.After, Description: "e-3 votes"}}},
			{ID: "etcd-add-4", Kind: plan.EtcdAddMember, Summary: "Add e-4", Reversible: true},
		},
	}
}

func TestBody(t *testing.T) {
	b := Body(BodyInput{Plan: bodyPlan(), SpecCommit: "abcdef0123456789abcdef", Diff: "+x\n"})
	for _, want := range []string{
		"### EtcdCluster/e: step 1 of 2", "| ▶ | 1 | `etcd-add-3` |", `Add e-3 \| as a learner`, "```mermaid", "s0 --> s1",
		// Plain bullets, not a task list: a reviewer's tick would be
		// undone by every update, and GitHub would count "0 of 2 tasks".
		"**Before it starts:**\n- healthy\n", "**Done when:**\n- e-3 votes\n", "**Rollback:** lower size",
		"<details><summary>Manifests this step changes</summary>", "```diff\n+x\n```", "<!-- cairn cluster=EtcdCluster/e step=etcd-add-3 plan=0123456789ab outcome=pending -->",
		"- **Spec commit:** abcdef0123456789abcdef (the base this branch is built on)",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("body lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(b, "- [ ]") || strings.Contains(b, "- [x]") {
		t.Errorf("the gates are a task list:\n%s", b)
	}
}

func TestBodySaysWhichGateHoldsNow(t *testing.T) {
	p := bodyPlan()
	p.Steps[0].Gates = append([]plan.Gate{{Kind: plan.GateMemberReady, When: plan.Before, Member: "e-1", Description: "e-1 is ready"}}, p.Steps[0].Gates...)
	check := func(one plan.Plan) (bool, string) {
		if len(one.Steps[0].Gates) != 1 {
			t.Fatalf("asked about %d gates at once", len(one.Steps[0].Gates))
		}
		if one.Steps[0].Gates[0].Member == "e-1" {
			return false, "e-1 is not ready"
		}
		return true, ""
	}
	gates := GateStates(p, check)
	if len(gates) != 2 || gates[0].Holds || gates[0].Why != "e-1 is not ready" || !gates[1].Holds {
		t.Fatalf("gates %+v", gates)
	}
	if len(p.Steps[0].Gates) != 3 {
		t.Fatal("GateStates changed the plan's step")
	}
	b := Body(BodyInput{Plan: p, SpecCommit: "abc", Gates: gates})
	if !strings.Contains(b, "**Before it starts:**\n- ⏳ e-1 is ready (not yet: e-1 is not ready)\n- ✅ healthy (holds now)\n\n**Done when:**\n- e-3 votes\n") {
		t.Errorf("gates in the body:\n%s", b)
	}
	if c := StepCheck(p, p.Steps[0], gates); c.State != "pending" || c.Description != "waits for e-1 is ready: e-1 is not ready" {
		t.Errorf("check %+v", c)
	}
	if GateStates(p, nil) != nil {
		t.Error("without a check, no gate is checked")
	}
}

func TestTitlesStayWithinGitHubsLimit(t *testing.T) {
	name := strings.Repeat("a", 52) // the longest valid cluster name
	for _, k := range plan.Kinds() {
		for _, summary := range []string{"short", strings.Repeat("é", 300), strings.Repeat("x", 255) + "€€"} {
			p := plan.Plan{Cluster: plan.ClusterRef{Kind: "PostgresCluster", Name: name}}
			s := plan.Step{Kind: k, Summary: summary}
			title := Title(p, s)
			if n := utf8.RuneCountInString(title); n > MaxTitle || !utf8.ValidString(title) {
				t.Fatalf("%s: a title of %d characters: %q", k, n, title)
			}
			if summary == "short" && title != "cairn: "+name+": short" {
				t.Errorf("a short title is cut: %q", title)
			}
			if summary != "short" && !strings.Contains(title, " … ") {
				t.Errorf("a cut title does not say so: %q", title)
			}
		}
	}
}

func TestBodyStaysUnderGitHubsLimit(t *testing.T) {
	huge := strings.Repeat("+ a line of a very large manifest diff\n", 5000)
	b := Body(BodyInput{Plan: bodyPlan(), Current: 1, SpecCommit: "abc", Diff: huge})
	if len(b) > MaxBody {
		t.Fatalf("body is %d characters", len(b))
	}
	// What providers add stays within the limit too.
	noted := WithMergeRefusal(WithWaiting(b, strings.Repeat("w", 5000)), "0123", strings.Repeat("r", 5000))
	if n := utf8.RuneCountInString(noted + "\n<!-- cairn closed -->\n"); n > MaxBody {
		t.Fatalf("a noted body is %d characters", n)
	}
	if !strings.Contains(b, "diff cut at") || !strings.HasSuffix(b, "-->\n") || !strings.Contains(b, "| ▶ | 2 |") {
		t.Errorf("the diff is cut, the rest kept:\n%s", b[len(b)-400:])
	}
}

func TestStepCheck(t *testing.T) {
	p := bodyPlan()
	s := p.Steps[0]
	if c := StepCheck(p, s, nil); c.State != "success" {
		t.Errorf("%+v", c)
	}
	holds := []GateState{{Gate: s.Gates[0], Holds: true}}
	if c := StepCheck(p, s, holds); c.State != "success" {
		t.Errorf("gates that hold: %+v", c)
	}
	waits := []GateState{{Gate: s.Gates[0], Why: "e-1 is not ready " + strings.Repeat("y", 300)}}
	if c := StepCheck(p, s, waits); c.State != "pending" || !strings.HasPrefix(c.Description, "waits for healthy: e-1 is not ready") || len([]rune(c.Description)) > 140 {
		t.Errorf("a gate that waits: %+v", c)
	}
	s.Decisions = []plan.Decision{{Policy: "window", Verdict: plan.Hold, Reason: "opens at 22:00"}}
	if c := StepCheck(p, s, waits); c.State != "pending" || !strings.Contains(c.Description, "held by window: opens at 22:00") {
		t.Errorf("%+v", c)
	}
	s.Decisions = append(s.Decisions, plan.Decision{Policy: "freeze", Verdict: plan.Deny, Reason: strings.Repeat("x", 300)})
	if c := StepCheck(p, s, waits); c.State != "failure" || len([]rune(c.Description)) > 140 {
		t.Errorf("%+v", c)
	}
}

func TestLabelsCompareAsSetsAndKeepPeoplesLabels(t *testing.T) {
	have := []string{"cairn/disruptive", "needs-dba", "cairn", "cairn/upgrademember"}
	want := []string{"cairn", "cairn/upgrademember", "cairn/disruptive"}
	if !sameLabels(have, want) {
		t.Error("the same cairn labels in another order are the same")
	}
	if sameLabels(have, []string{"cairn", "cairn/upgrademember"}) {
		t.Error("a cairn label less is a change")
	}
	got := withOthers(have, []string{"cairn", "cairn/scalein"})
	if strings.Join(got, ",") != "cairn,cairn/scalein,needs-dba" {
		t.Errorf("labels = %v", got)
	}
}

func TestTheDiffFenceOutgrowsBackticksInTheDiff(t *testing.T) {
	b := Body(BodyInput{Plan: bodyPlan(), SpecCommit: "abc", Diff: "+ script: |\n+   ```\n+   echo\n"})
	if !strings.Contains(b, "````diff\n") || !strings.Contains(b, "\n````\n") {
		t.Errorf("fence:\n%s", b)
	}
}

func TestBodySaysWhetherCairnMerges(t *testing.T) {
	merge := plan.Decision{Policy: "prod/auto-merge", Verdict: plan.Allow, AutoMerge: true}
	tests := []struct {
		name      string
		decisions []plan.Decision
		want      string
	}{
		{"no policy", nil, ""},
		{"allowed", []plan.Decision{merge}, "**Auto-merge:** yes: policy prod/auto-merge lets cairn merge it once its gates before it pass. Add a `do-not-merge` label"},
		{"held", []plan.Decision{merge, {Policy: "window", Verdict: plan.Hold}}, "**Auto-merge:** no: not while held by window."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := bodyPlan()
			p.Steps[0].Decisions = tc.decisions
			b := Body(BodyInput{Plan: p, SpecCommit: "abc"})
			if tc.want == "" && strings.Contains(b, "Auto-merge") || !strings.Contains(b, tc.want) {
				t.Errorf("body:\n%s\nwant %q", b, tc.want)
			}
		})
	}
}

func TestMergeRefusalNote(t *testing.T) {
	body := Body(BodyInput{Plan: bodyPlan(), SpecCommit: "abc", Diff: "+x\n"})
	noted := WithMergeRefusal(body, "0123", "GitHub answered 405 for #1: Required status check \"ci\" is expected.\nagain")
	if !MergeRefused(noted, "0123") || MergeRefused(noted, "4567") || MergeRefused(body, "0123") {
		t.Fatal("the note names the head it was refused at")
	}
	if !strings.Contains(noted, "**Auto-merge refused:** GitHub answered 405 for \\#1: Required status check \"ci\" is expected. again.") {
		t.Errorf("note:\n%s", noted)
	}
	if WithoutMergeRefusal(noted) != body || WithoutMergeRefusal(WithMergeRefusal(noted, "4567", "x")) != body {
		t.Error("the note comes off whole")
	}
	closed := noted + "\n<!-- cairn closed -->\n"
	if WithoutMergeRefusal(closed) != body+"\n<!-- cairn closed -->\n" {
		t.Error("what follows the note stays")
	}
}

func TestWaitingNote(t *testing.T) {
	body := Body(BodyInput{Plan: bodyPlan(), SpecCommit: "abc", Diff: "+x\n"})
	w := WithWaiting(body, "waiting: e-1 is ready")
	if !strings.HasPrefix(w, "> **Waiting:** waiting: e-1 is ready; `cairn/plan` is pending until then.") || WithoutWaiting(w) != body {
		t.Errorf("waiting:\n%s", w)
	}
	if WithWaiting(w, "waiting: e-1 is ready") != w || WithoutWaiting(WithWaiting(w, "other")) != body {
		t.Error("a note already there is replaced")
	}
}

// memPRs is a provider in memory that counts its updates.
type memPRs struct {
	Provider
	prs     []PullRequest
	updates int
}

func (m *memPRs) Update(_ context.Context, pr PullRequest) error {
	m.updates++
	for i := range m.prs {
		if m.prs[i].Number == pr.Number {
			m.prs[i] = pr
		}
	}
	return nil
}

// While a plan waits (a member down), its cluster's open pull request
// turns pending once, saying why; the next pass writes nothing more.
func TestAWaitingPlanSetsItsOpenPullRequestPending(t *testing.T) {
	body := Body(BodyInput{Plan: bodyPlan(), SpecCommit: "abc", Diff: "+x\n"})
	m := &memPRs{prs: []PullRequest{
		{Number: 1, Branch: Branch("e", "etcd-add-3"), State: Open, Head: "h1", Body: WithMergeRefusal(body, "h1", "405"), Check: Check{State: "success"}},
		{Number: 2, Branch: Branch("other", "etcd-add-3"), State: Open, Head: "h2", Body: body, Check: Check{State: "success"}},
		{Number: 3, Branch: Branch("e", "create"), State: Merged, Head: "h3", Body: body},
	}}
	p := &Publisher{PRs: m}
	pl := plan.Plan{Cluster: plan.ClusterRef{Kind: "EtcdCluster", Name: "e"}, Status: plan.StatusWaiting,
		Waiting: []plan.Gate{{Kind: plan.GateMemberReady, When: plan.Before, Member: "e-1", Description: "e-1 is ready"}}}
	for pass := range 2 {
		if err := p.markWaiting(context.Background(), pl, m.prs); err != nil {
			t.Fatal(err)
		}
		if m.updates != 1 {
			t.Fatalf("pass %d: %d updates, want 1 in all", pass, m.updates)
		}
	}
	got := m.prs[0]
	if got.Check != (Check{State: "pending", Description: "waiting: e-1 is ready"}) || !strings.HasPrefix(got.Body, "> **Waiting:** waiting: e-1 is ready") {
		t.Errorf("waiting pull request: %+v", got)
	}
	if MergeRefused(got.Body, "h1") || WithoutWaiting(got.Body) != body {
		t.Error("the waiting note replaces a merge refusal note, the rest of the body stays")
	}
	if m.prs[1].Check.State != "success" || m.prs[2].Body != body {
		t.Error("other clusters' and merged pull requests are left alone")
	}
}

// The notes put on a body (waiting, a merge refusal) carry text from
// specs, gates and GitHub's errors: it is escaped as the body's own is,
// and makes no mention, link or tag.
func TestNotesAreEscaped(t *testing.T) {
	evil := "<img src=x> @team [x](http://evil.example) www.evil.example **b** `c` <!-- cairn waiting -->"
	for name, noted := range map[string]string{
		"waiting":       WithWaiting("body\n", evil),
		"merge refusal": WithMergeRefusal("body\n", "0123", evil),
	} {
		for raw, escaped := range map[string]string{
			"<img": `\<img`, "@team": "@&#8203;team", "[x](": `\[x\](`, "http://evil": "http:&#8203;//evil",
			"www.evil": "www&#8203;.evil", "**b**": `\*\*b\*\*`, "`c`": "\\`c\\`",
		} {
			if !strings.Contains(noted, escaped) || strings.Contains(strings.ReplaceAll(noted, escaped, ""), raw) {
				t.Errorf("%s note holds %q unescaped (want %q):\n%s", name, raw, escaped, noted)
			}
		}
	}
	if w := WithWaiting("body\n", evil); WithoutWaiting(w) != "body\n" {
		t.Errorf("the escaped waiting note is not removed whole:\n%s", w)
	}
}

// A refusal note may name the state the provider said the pull request
// was in; it is read back for its head only, and a state that is not a
// plain word is left out.
func TestMergeRefusalState(t *testing.T) {
	body := "body\n"
	tests := []struct {
		name      string
		noted     string
		head      string
		wantState string
		wantOK    bool
	}{
		{"no note", body, "0123", "", false},
		{"a note without a state", WithMergeRefusal(body, "0123", "405"), "0123", "", true},
		{"a note with a state", WithMergeRefusalIn(body, "0123", "blocked", "405"), "0123", "blocked", true},
		{"another head", WithMergeRefusalIn(body, "0123", "blocked", "405"), "4567", "", false},
		{"a head that starts like it", WithMergeRefusalIn(body, "01234", "clean", "405"), "0123", "", false},
		{"a state with more than letters", WithMergeRefusalIn(body, "0123", "blocked --> <b>", "405"), "0123", "", true},
		{"has_hooks", WithMergeRefusalIn(body, "0123", "has_hooks", "405"), "0123", "has_hooks", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state, ok := MergeRefusal(tc.noted, tc.head)
			if state != tc.wantState || ok != tc.wantOK || MergeRefused(tc.noted, tc.head) != tc.wantOK {
				t.Errorf("MergeRefusal = %q, %v; want %q, %v (body %q)", state, ok, tc.wantState, tc.wantOK, tc.noted)
			}
			if WithoutMergeRefusal(tc.noted) != body {
				t.Errorf("the note does not come off whole: %q", WithoutMergeRefusal(tc.noted))
			}
		})
	}
}
