package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/plan"
)

// stubMerger is a provider whose merges answer err.
type stubMerger struct {
	Provider
	err    error
	merged []string
}

func (s *stubMerger) Merge(_ context.Context, pr PullRequest) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	s.merged = append(s.merged, pr.Branch)
	return "0123456789abcdef", nil
}

func TestAutoMergeDecisions(t *testing.T) {
	merge := plan.Decision{Policy: "p/auto-merge", Verdict: plan.Allow, AutoMerge: true}
	hold := plan.Decision{Policy: "window", Verdict: plan.Hold}
	gatesPass := func(plan.Plan) (bool, string) { return true, "" }
	gatesFail := func(plan.Plan) (bool, string) { return false, "every member is ready: e-1 is not ready" }
	tests := []struct {
		name       string
		decisions  []plan.Decision
		reversible bool
		labels     []string
		gates      func(plan.Plan) (bool, string)
		mergeErr   error
		action     Action
		note       string
	}{
		{"merged", []plan.Decision{merge}, true, nil, gatesPass, nil, ActionAutoMerged, "merged by cairn"},
		{"no policy asks", nil, true, nil, gatesPass, nil, ActionOpened, ""},
		{"auto-merge turned off", []plan.Decision{merge}, true, nil, nil, nil, ActionOpened, ""},
		{"held", []plan.Decision{merge, hold}, true, nil, gatesPass, nil, ActionOpened, "auto-merge: not while held by window"},
		{"irreversible this time", []plan.Decision{merge}, false, nil, gatesPass, nil, ActionOpened, "irreversible"},
		{"before gates fail", []plan.Decision{merge}, true, nil, gatesFail, nil, ActionOpened, "auto-merge waits: every member is ready"},
		{"do-not-merge label", []plan.Decision{merge}, true, []string{"cairn", "do-not-merge/hold"}, gatesPass, nil, ActionOpened, "not while labelled do-not-merge/hold"},
		{"refused by the provider (405)", []plan.Decision{merge}, true, nil, gatesPass, fmt.Errorf("%w: GitHub answered 405", ErrMergeRefused), ActionOpened, "auto-merge refused, left to a person"},
		{"failed", []plan.Decision{merge}, true, nil, gatesPass, errors.New("connection reset"), ActionFailed, "connection reset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := bodyPlan()
			pl.Steps[0].Decisions, pl.Steps[0].Reversible = tc.decisions, tc.reversible
			prs := &stubMerger{err: tc.mergeErr}
			p := &Publisher{PRs: prs, MergeGates: tc.gates}
			pr := &PullRequest{Number: 7, Branch: Branch("e", "etcd-add-3"), State: Open, Head: "abc", Labels: tc.labels}
			o := Outcome{Cluster: "EtcdCluster/e", Step: "etcd-add-3", Action: ActionOpened}
			o.merge, o.Note = p.mergeable(pl, pr)
			out := []Outcome{o}
			errs := p.mergeAll(context.Background(), out)
			if out[0].Action != tc.action || !strings.Contains(out[0].Note, tc.note) || (tc.note == "" && out[0].Note != "") {
				t.Fatalf("outcome %+v, want %s %q", out[0], tc.action, tc.note)
			}
			if (tc.action == ActionFailed) != (len(errs) > 0) {
				t.Errorf("errors %v", errs)
			}
			if (tc.action == ActionAutoMerged) != (len(prs.merged) == 1) {
				t.Errorf("merged %v", prs.merged)
			}
		})
	}
}
