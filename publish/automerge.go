package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/plan"
)

// DoNotMerge starts the labels that keep cairn from merging a pull
// request (do-not-merge, do-not-merge/hold, ...).
const DoNotMerge = "do-not-merge"

// mergeable returns the pull request of a plan's next step if cairn
// merges it in this pass, else a note saying why not (empty when no
// policy lets cairn merge the step).
func (p *Publisher) mergeable(pl plan.Plan, pr *PullRequest) (*PullRequest, string) {
	ok, why := pl.Steps[0].AutoMerge()
	switch {
	case why == "" || p.MergeGates == nil:
		return nil, ""
	case !ok:
		return nil, "auto-merge: " + why
	case pr == nil || pr.State != Open:
		return nil, ""
	}
	if _, ok := p.PRs.(Merger); !ok {
		return nil, "auto-merge: the provider cannot merge"
	}
	for _, l := range pr.Labels {
		if strings.HasPrefix(strings.ToLower(l), DoNotMerge) {
			return nil, fmt.Sprintf("auto-merge: not while labelled %s", l)
		}
	}
	if pass, why := p.MergeGates(pl); !pass {
		return nil, "auto-merge waits: " + why
	}
	return pr, ""
}

// mergeAll merges the pull requests mergeable found, in the outcomes'
// order. A merge the provider refuses leaves the pull request to a person
// (the note says why, and when the provider tries again); other failures
// are returned.
func (p *Publisher) mergeAll(ctx context.Context, out []Outcome) []error {
	m, ok := p.PRs.(Merger)
	if !ok {
		return nil
	}
	var errs []error
	for i := range out {
		o := &out[i]
		if o.merge == nil {
			continue
		}
		if p.Owns != nil && !p.Owns(o.ref) {
			o.Action, o.Note, o.merge = ActionElsewhere, "another replica owns this cluster now", nil
			continue
		}
		head, err := m.Merge(ctx, *o.merge)
		switch {
		case errors.Is(err, ErrMergeRefused):
			o.Note = fmt.Sprintf("auto-merge refused, left to a person: %v", err)
			p.logger().Info("auto-merge refused", "cluster", o.Cluster, "branch", o.Branch, "reason", err.Error())
		case err != nil:
			o.Action, o.Note = ActionFailed, fmt.Sprintf("auto-merge: %v", err)
			errs = append(errs, fmt.Errorf("merge step %s of %s: %w", o.Step, o.Cluster, err))
		default:
			o.Action, o.Note = ActionAutoMerged, "merged by cairn into the base at "+short(head)
		}
		o.merge = nil
	}
	return errs
}
