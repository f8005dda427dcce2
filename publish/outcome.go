package publish

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner/plan"
)

// Once a merged step is done (each of its "after" gates holds in the live
// state) and the cluster's next step is published, or its plan is done,
// cairn posts one comment on the merged step's pull request with the
// outcome: when it was merged, when cairn saw its gates hold, how long
// that took, and each gate with its result. Its body's "Done when" list
// then shows the results too, and its footer turns from outcome=pending
// to outcome=posted.
//
// Exactly once per merged pull request, across passes and restarts: a
// body saying outcome=posted is done; otherwise the comment is posted
// unless one of the pull request's comments carries its marker already (a
// run that died between the comment and the body), and the body is
// written last. Pull requests whose body says neither (made before cairn
// noted outcomes) get none.
const (
	outcomePending = "outcome=pending"
	outcomePosted  = "outcome=posted"
	outcomeMarker  = "<!-- cairn outcome head="
)

// Commenter is a provider that can note a merged step's outcome on its
// pull request.
type Commenter interface {
	// Comments returns the bodies of pr's comments, oldest first.
	Comments(ctx context.Context, pr PullRequest) ([]string, error)
	// Comment posts a comment on pr.
	Comment(ctx context.Context, pr PullRequest, body string) error
	// SetBody replaces pr's body, whatever its state (a merged one too).
	SetBody(ctx context.Context, pr PullRequest, body string) error
}

// MergeTimer is a provider that knows when a pull request was merged
// (GitHub's merged_at). Without one, the outcome gives no duration: the
// times of merge commits cairn makes are not the times they were made.
type MergeTimer interface {
	MergedAt(ctx context.Context, pr PullRequest) (time.Time, error)
}

// noteOutcome posts the outcome of the cluster's step merged last (the
// base's entry point selects it) on its pull request, once, when that
// step is done. next is the pull request of the plan's next step, nil
// when the plan is done. A failure is logged and tried again in a later
// pass: it holds nothing back.
func (p *Publisher) noteOutcome(ctx context.Context, pl plan.Plan, base *object.Commit, prs []PullRequest, next *PullRequest) {
	c, ok := p.PRs.(Commenter)
	if !ok || p.After == nil {
		return
	}
	e := entryAt(p.Repo, base, pl.Cluster.Name)
	s, ok := e.Selected()
	if e.Step == "" || !ok || (next != nil && next.Branch == Branch(pl.Cluster.Name, e.Step)) {
		return
	}
	merged := existing(prs, Branch(pl.Cluster.Name, e.Step))
	if merged == nil || merged.State != Merged || footerSays(merged.Body) != outcomePending {
		return
	}
	results := afterStates(pl.Cluster, s, p.After)
	for _, r := range results {
		if !r.Holds {
			return // not done yet: the outcome waits
		}
	}
	if err := p.postOutcome(ctx, c, *merged, s, results, next); err != nil {
		p.logger().Warn("noting the outcome of a merged step failed; a later pass tries again", "branch", merged.Branch, "err", err.Error())
	}
}

// postOutcome posts the comment unless it is there already, then writes
// the body with the results.
func (p *Publisher) postOutcome(ctx context.Context, c Commenter, pr PullRequest, s plan.Step, results []GateState, next *PullRequest) error {
	var mergedAt time.Time
	if mt, ok := p.PRs.(MergeTimer); ok {
		at, err := mt.MergedAt(ctx, pr)
		if err != nil {
			return err
		}
		mergedAt = at
	}
	now := p.now()
	o := outcome{step: s, head: pr.Head, mergedAt: mergedAt, done: now, results: results, next: next}
	comments, err := c.Comments(ctx, pr)
	if err != nil {
		return err
	}
	posted := false
	for _, body := range comments {
		posted = posted || strings.Contains(body, o.marker())
	}
	if !posted {
		if err := c.Comment(ctx, pr, o.comment()); err != nil {
			return err
		}
	}
	return c.SetBody(ctx, pr, o.body(pr.Body))
}

// afterStates checks each "after" gate of s with check, one gate at a
// time (the step carrying only that gate).
func afterStates(ref plan.ClusterRef, s plan.Step, check func(plan.ClusterRef, plan.Step) (bool, string)) []GateState {
	var out []GateState
	for _, g := range s.Gates {
		if g.When != plan.After {
			continue
		}
		one := s
		one.Gates = []plan.Gate{g}
		holds, why := check(ref, one)
		if holds {
			why = ""
		}
		out = append(out, GateState{Gate: g, Holds: holds, Why: why})
	}
	return out
}

// outcome is a merged step's outcome.
type outcome struct {
	step     plan.Step
	head     string
	mergedAt time.Time // zero when the provider does not know
	done     time.Time // when cairn saw every "after" gate hold
	results  []GateState
	next     *PullRequest
}

func (o outcome) marker() string { return outcomeMarker + o.head + " -->" }

// held says when the gates were seen to hold, and how long after the
// merge.
func (o outcome) held() string {
	at := "at " + o.done.UTC().Format(time.RFC3339)
	if !o.mergedAt.IsZero() && !o.done.Before(o.mergedAt) {
		at += ", " + o.done.Sub(o.mergedAt).Round(time.Second).String() + " after the merge"
	}
	return at
}

// comment is the outcome comment.
func (o outcome) comment() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**cairn: step `%s` is done.**\n\n", o.step.ID)
	if o.mergedAt.IsZero() {
		b.WriteString("- **Merged:** the provider keeps no merge time\n")
	} else {
		fmt.Fprintf(&b, "- **Merged:** %s\n", o.mergedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "- **Done:** every gate held %s (cairn checks once a pass: done by then)\n", o.held())
	if o.next != nil {
		fmt.Fprintf(&b, "- **Next step:** %s\n", prRef(*o.next))
	} else {
		b.WriteString("- **Next step:** none, the plan is done: the cluster runs what its spec asks for\n")
	}
	b.WriteString("\n")
	b.WriteString(doneWhen(o.step, o.results, o.held()))
	b.WriteString(o.marker() + "\n")
	return b.String()
}

// body is the merged pull request's body with its "Done when" list
// showing the results and its footer saying the outcome is posted.
func (o outcome) body(body string) string {
	body = strings.Replace(body, doneWhen(o.step, nil, ""), doneWhen(o.step, o.results, o.held()), 1)
	i := footerAt(body)
	if i < 0 {
		return body
	}
	return body[:i] + strings.Replace(body[i:], outcomePending, outcomePosted, 1)
}

// footerAt is where the footer Body ends a body with starts; -1 when
// there is none.
func footerAt(body string) int { return strings.LastIndex(body, "\n<!-- cairn cluster=") }

// footerSays is the outcome state the footer says: outcomePending,
// outcomePosted, or "" (a body made before cairn noted outcomes).
func footerSays(body string) string {
	i := footerAt(body)
	if i < 0 {
		return ""
	}
	line, _, _ := strings.Cut(body[i+1:], "\n")
	for _, state := range []string{outcomePending, outcomePosted} {
		if strings.HasSuffix(line, " "+state+" -->") {
			return state
		}
	}
	return ""
}

func (p *Publisher) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}
