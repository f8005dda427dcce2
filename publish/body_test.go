package publish

import (
	"strings"
	"testing"

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
	b := Body(bodyPlan(), 0, "abcdef0123456789abcdef", "+x\n")
	for _, want := range []string{
		"### EtcdCluster/e: step 1 of 2", "| ▶ | 1 | `etcd-add-3` |", `Add e-3 \| as a learner`, "```mermaid", "s0 --> s1",
		"**Before it starts:**\n- [ ] healthy", "**Done when:**\n- [ ] e-3 votes", "**Rollback:** lower size",
		"<details><summary>Manifests this step changes</summary>", "```diff\n+x\n```", "<!-- cairn cluster=EtcdCluster/e step=etcd-add-3 plan=0123456789ab -->",
		"spec commit `abcdef012345`",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("body lacks %q:\n%s", want, b)
		}
	}
}

func TestBodyStaysUnderGitHubsLimit(t *testing.T) {
	huge := strings.Repeat("+ a line of a very large manifest diff\n", 5000)
	b := Body(bodyPlan(), 1, "abc", huge)
	if len(b) > MaxBody {
		t.Fatalf("body is %d characters", len(b))
	}
	if !strings.Contains(b, "diff cut at") || !strings.HasSuffix(b, "-->\n") || !strings.Contains(b, "| ▶ | 2 |") {
		t.Errorf("the diff is cut, the rest kept:\n%s", b[len(b)-400:])
	}
}

func TestStepCheck(t *testing.T) {
	p := bodyPlan()
	s := p.Steps[0]
	if c := StepCheck(p, s); c.State != "success" {
		t.Errorf("%+v", c)
	}
	s.Decisions = []plan.Decision{{Policy: "window", Verdict: plan.Hold, Reason: "opens at 22:00"}}
	if c := StepCheck(p, s); c.State != "pending" || !strings.Contains(c.Description, "held by window: opens at 22:00") {
		t.Errorf("%+v", c)
	}
	s.Decisions = append(s.Decisions, plan.Decision{Policy: "freeze", Verdict: plan.Deny, Reason: strings.Repeat("x", 300)})
	if c := StepCheck(p, s); c.State != "failure" || len([]rune(c.Description)) > 140 {
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
	b := Body(bodyPlan(), 0, "abc", "+ script: |\n+   ```\n+   echo\n")
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
			b := Body(p, 0, "abc", "")
			if tc.want == "" && strings.Contains(b, "Auto-merge") || !strings.Contains(b, tc.want) {
				t.Errorf("body:\n%s\nwant %q", b, tc.want)
			}
		})
	}
}
