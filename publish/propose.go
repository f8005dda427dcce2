package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
)

// Publisher publishes the next step of every cluster as a branch and a
// pull request, and closes the pull requests a new plan supersedes.
// Publishing the same plans again writes nothing. It never plans: the
// caller plans against the base commit and hands the plans in.
type Publisher struct {
	Repo *gitrepo.Repo
	PRs  Provider
	// Render renders a cluster's tree for a plan, selecting a step, and
	// returns the built manifests of its base and of that step (the pull
	// request's diff).
	Render func(c spec.Cluster, p plan.Plan, step string) (renderer.Tree, renderer.Built, error)
	// RenderWorkers render a pass's steps side by side, so Render must be
	// safe for concurrent use (a Renderer and a Cache are); 0 is one per
	// core (GOMAXPROCS), 1 renders one step at a time.
	RenderWorkers int
	// Name and Email sign cairn's commits.
	Name, Email string
	// Wording is what the bodies say that depends on a cluster's kind, by
	// kind; a kind without one gets the generic wording.
	Wording map[string]Wording
	// Hold, when set, holds a cluster back: its pull requests are left as
	// they are (the reconcile loop holds a cluster until the merged step's
	// gates pass in the live state).
	Hold func(pl plan.Plan) (held bool, reason string)
	// MergeGates, when set, turns auto-merge on: it reports whether a
	// plan's next step's "before" gates pass in the live state now. At the
	// end of Publish, cairn merges the pull requests of the steps a policy
	// lets it merge (plan.Step.AutoMerge) whose gates pass, that carry no
	// do-not-merge label, through a provider that is a Merger. nil: cairn
	// merges nothing.
	MergeGates func(pl plan.Plan) (pass bool, why string)
	// Gates, when set, reports whether the "before" gates of a plan's next
	// step hold in the live state now. Publish asks it one gate at a time
	// (the step carrying only that gate): each open step's cairn/plan
	// status is pending while one does not hold, and its body says which
	// hold. nil: the status follows the policies only.
	Gates func(pl plan.Plan) (pass bool, why string)
	// Live, when set, is the observed cluster a plan was made against
	// (nil when none runs): the body shows it as a table, and the roles
	// in its disruption note, when its fingerprint is the plan's.
	Live func(ref plan.ClusterRef) *live.Cluster
	// After, when set, reports whether step s of a cluster shows done in
	// the live state: Publish asks it one "after" gate at a time (the step
	// carrying only that gate). Once each holds, and the cluster's next
	// step is published or its plan is done, the merged step's pull
	// request gets one comment with the outcome (outcome.go), through a
	// provider that is a Commenter. nil: no outcome is noted.
	After func(ref plan.ClusterRef, s plan.Step) (pass bool, why string)
	// Now is the time outcomes are seen at; default time.Now.
	Now func() time.Time
	// Owns, when set, is asked before each cluster's writes: false (the
	// cluster's shard moved to another replica during the pass) leaves the
	// cluster to its new owner, with ActionElsewhere. nil: every cluster.
	Owns func(ref plan.ClusterRef) bool
	Log  *slog.Logger

	// diffs remembers the steps' diffs across passes (diffmemo.go).
	diffs diffMemo
}

// Action is what Publish did for a cluster.
type Action string

// The actions.
const (
	ActionOpened    Action = "opened"
	ActionUpdated   Action = "updated"
	ActionUnchanged Action = "unchanged"
	// ActionMerged: the base holds the step (its pull request was merged
	// in this cycle, see identity.go); the step waits for the live state,
	// and no new pull request is opened meanwhile.
	ActionMerged Action = "merged"
	// ActionDeclined: a person closed the step's pull request in this
	// cycle; cairn does not reopen it.
	ActionDeclined Action = "declined"
	// ActionForeign: the step's branch holds a person's commit (see
	// foreign.go); cairn leaves it alone and never merges it.
	ActionForeign Action = "foreign"
	// ActionHeld: the cluster is held back (see Publisher.Hold).
	ActionHeld Action = "held"
	// ActionAutoMerged: cairn merged the step's pull request itself in
	// this pass (auto-merge); the step waits for the live state.
	ActionAutoMerged Action = "auto-merged"
	// ActionElsewhere: another replica owns the cluster now (its shard
	// moved during the pass); this one wrote nothing for it.
	ActionElsewhere Action = "elsewhere"
	// ActionFailed: publishing failed; Note says why.
	ActionFailed Action = "failed"
	ActionNone   Action = "none"
)

// Outcome is what happened to one cluster.
type Outcome struct {
	Cluster string
	Status  plan.Status
	Step    string
	Branch  string
	Action  Action
	// Closed lists the branches whose pull requests were closed.
	Closed []string
	// Note explains a refusal or a wait, or why an auto-merge waits.
	Note string
	// merge is the pull request to merge at the end of the pass.
	merge *PullRequest
	ref   plan.ClusterRef
}

// ErrBaseMoved: the base branch moved after the plans were made; plan
// again on the new base and publish again.
var ErrBaseMoved = errors.New("the base branch moved while publishing")

// Publish publishes the first step of each plan, which the caller made
// from the specs at base. clusters are those specs.
func (p *Publisher) Publish(ctx context.Context, base *object.Commit, clusters []spec.Cluster, plans plan.List) ([]Outcome, error) {
	prs, err := p.PRs.List(ctx)
	if err != nil {
		return nil, err
	}
	p.diffs.rotate()
	// A provider that batches holds the pass's writes until flush: a
	// step's pull request that could not be written fails its cluster; an
	// outcome comment that could not is logged, as when written at once.
	var errs []error
	flush := func(out []Outcome) []Outcome { return out }
	if b, ok := p.PRs.(Batcher); ok {
		b.BeginBatch()
		flushed := false
		flush = func(out []Outcome) []Outcome {
			if flushed {
				return out
			}
			flushed = true
			failed := b.FlushBatch(ctx)
			for i := range out {
				if err, bad := failed[out[i].Branch]; bad && out[i].Branch != "" {
					out[i].Action, out[i].Note, out[i].merge = ActionFailed, err.Error(), nil
					errs = append(errs, fmt.Errorf("%s: %w", out[i].Cluster, err))
					delete(failed, out[i].Branch)
				}
			}
			for branch, err := range failed {
				p.logger().Warn("a record was not written", "branch", branch, "err", err.Error())
			}
			return out
		}
		defer flush(nil)
	}
	// Each cluster sees only its own pull requests, and each spec is found
	// by its name: a pass costs the same for each cluster whatever the
	// fleet's size.
	byCluster := map[string][]PullRequest{}
	for _, pr := range prs {
		if c := clusterOf(pr.Branch); c != "" {
			byCluster[c] = append(byCluster[c], pr)
		}
	}
	specs := make(map[specKey]spec.Cluster, len(clusters))
	for _, c := range clusters {
		specs[specKey{c.Ref().Kind, c.Ref().Name}] = c
	}
	// Three phases: each cluster's step is rendered and its commit made
	// and proven; every branch that moved is pushed in one push; then the
	// pull requests are opened, updated and closed.
	// The steps render on every core ahead of the staging (ahead.go).
	specOf := func(pl plan.Plan) spec.Cluster { return specs[specKey{pl.Cluster.Kind, pl.Cluster.Name}] }
	ahead := NewAhead(ctx, len(plans.Plans), p.RenderWorkers, func(i int) bool {
		pl := plans.Plans[i]
		return pl.Status == plan.StatusPlanned && specOf(pl) != nil && (p.Owns == nil || p.Owns(pl.Cluster))
	}, func(i int) (renderer.Tree, renderer.Built, error) {
		pl := plans.Plans[i]
		return p.Render(specOf(pl), pl, pl.Steps[0].ID)
	})
	defer ahead.Close()
	jobs := make([]*job, 0, len(plans.Plans))
	var staged []*gitrepo.Staged
	for i, pl := range plans.Plans {
		render := func() (renderer.Tree, renderer.Built, error) {
			if t, b, err, ok := ahead.Get(i); ok {
				return t, b, err
			}
			return p.Render(specOf(pl), pl, pl.Steps[0].ID)
		}
		j := p.begin(ctx, specOf(pl), pl, base, byCluster[pl.Cluster.Name], render)
		if errors.Is(j.err, ErrBaseMoved) {
			return nil, j.err // plan everything again on the new base (flushed by the defer)
		}
		jobs = append(jobs, j)
	}
	ahead.Close()
	for _, j := range jobs {
		if j.step == nil || j.step.staged == nil {
			continue
		}
		if p.Owns != nil && !p.Owns(j.pl.Cluster) {
			// The shard moved while the pass rendered: nothing is pushed
			// for a cluster this replica no longer owns.
			j.o.Action, j.o.Note, j.done = ActionElsewhere, "another replica owns this cluster now", true
			j.step.staged = nil
			continue
		}
		staged = append(staged, j.step.staged)
	}
	results, pushErrs := p.Repo.PushAll(ctx, staged)
	var out []Outcome
	moved := false
	for _, j := range jobs {
		if j.step != nil && j.step.staged != nil {
			j.step.res, j.step.err = results[0], pushErrs[0]
			results, pushErrs = results[1:], pushErrs[1:]
		}
		o, err := p.finish(ctx, j, base)
		if errors.Is(err, ErrBaseMoved) {
			// The others' branches were pushed on the base they were
			// planned on: their pull requests are opened, then everything
			// is planned again on the new base (nothing is merged).
			moved = true
			continue
		}
		if err != nil {
			// One cluster's failure does not hold the others back.
			p.logger().Error("publishing failed", "cluster", j.pl.Cluster.String(), "err", err.Error())
			o.Action, o.Note, o.merge = ActionFailed, err.Error(), nil
			errs = append(errs, err)
		}
		out = append(out, o)
	}
	out = flush(out)
	if moved {
		return out, ErrBaseMoved
	}
	// Merges come last: each one moves the base the others were planned on.
	errs = append(errs, p.mergeAll(ctx, out)...)
	return out, errors.Join(errs...)
}

// specKey keys a spec and a plan's cluster alike, by kind and name (a
// running cluster whose spec is gone finds none).
type specKey struct{ kind, name string }

// job is one cluster's publishing in a pass, across the pass's phases.
type job struct {
	pl  plan.Plan
	prs []PullRequest
	o   Outcome
	// done: the outcome is known before anything is pushed (another
	// replica's, held).
	done bool
	// step is the plan's first step being published; err stops the job.
	step *stepJob
	err  error
}

// stepJob is a step's publishing: known at once (merged, declined, a
// person's head), or its branch staged for the pass's push, then its pull
// request.
type stepJob struct {
	action Action
	pr     *PullRequest
	err    error

	staged *gitrepo.Staged
	built  renderer.Built
	open   *PullRequest // the branch's pull request before this pass
	res    gitrepo.Result
}

// begin does a cluster's work up to the pass's push: the checks that need
// no push, then the step rendered and its commit staged.
func (p *Publisher) begin(ctx context.Context, c spec.Cluster, pl plan.Plan, base *object.Commit, prs []PullRequest, render renderFunc) *job {
	j := &job{pl: pl, prs: prs, o: Outcome{Cluster: pl.Cluster.String(), Status: pl.Status, Action: ActionNone, Note: note(pl), ref: pl.Cluster}}
	if p.Owns != nil && !p.Owns(pl.Cluster) {
		j.o.Action, j.o.Note, j.done = ActionElsewhere, "another replica owns this cluster now", true
		return j
	}
	if p.Hold != nil {
		if held, why := p.Hold(pl); held {
			j.o.Action, j.o.Note, j.done = ActionHeld, why, true
			return j
		}
	}
	if pl.Status == plan.StatusPlanned && c != nil {
		s := pl.Steps[0]
		j.o.Step, j.o.Branch = s.ID, Branch(pl.Cluster.Name, s.ID)
		j.step, j.err = p.stageStep(ctx, c, pl, base, prs, render)
	}
	return j
}

// finish does a cluster's work after the pass's push: the step's pull
// request, the outcome of the step merged before, and the closing of what
// the plan supersedes.
func (p *Publisher) finish(ctx context.Context, j *job, base *object.Commit) (Outcome, error) {
	o, pl, prs := j.o, j.pl, j.prs
	if j.done {
		return o, nil
	}
	if p.Owns != nil && !p.Owns(pl.Cluster) {
		// The shard moved during the pass: a branch pushed already is the
		// new owner's to adopt (the same commit, proven exact).
		o.Action, o.Note = ActionElsewhere, "another replica owns this cluster now"
		return o, nil
	}
	reason := o.Note
	if o.Branch != "" {
		reason = fmt.Sprintf("superseded by %s (plan %s, spec commit %s)", o.Branch, pl.ID, short(base.Hash.String()))
	}
	// A step that could not be published still supersedes the pull
	// requests of the steps before it: they are closed all the same (a
	// superseded one must not keep its green status), and the step's
	// error is returned after.
	var stepErr error
	if j.err != nil {
		stepErr = fmt.Errorf("%s step %s: %w", pl.Cluster, o.Step, j.err)
	} else if j.step != nil {
		action, pr, err := p.pullRequest(ctx, j, base)
		var fe *gitrepo.ForeignError
		switch {
		case action == ActionForeign && errors.As(err, &fe):
			o.Action, o.Note = action, foreignNote(fe, existing(prs, o.Branch))
		case errors.Is(err, ErrBaseMoved):
			return o, err
		case err != nil:
			stepErr = fmt.Errorf("%s step %s: %w", pl.Cluster, o.Step, err)
		default:
			o.Action = action
			o.merge, o.Note = p.mergeable(pl, pr)
			if pr != nil && pr.State == Open {
				p.noteOutcome(ctx, pl, base, prs, pr)
			}
		}
	}
	if pl.Status == plan.StatusConverged {
		p.noteOutcome(ctx, pl, base, prs, nil)
	}
	if pl.Status == plan.StatusWaiting {
		// A member not ready or a change in flight is no reason to close
		// a pull request someone may be reviewing: it waits with the plan,
		// its status pending and its body saying why.
		return o, p.markWaiting(ctx, pl, prs)
	}
	for _, pr := range prs {
		if pr.State != Open || clusterOf(pr.Branch) != pl.Cluster.Name || pr.Branch == o.Branch {
			continue
		}
		if err := p.PRs.Close(ctx, pr, reason); err != nil {
			return o, errors.Join(stepErr, fmt.Errorf("close %s: %w", pr.Branch, err))
		}
		o.Closed = append(o.Closed, pr.Branch)
	}
	return o, stepErr
}

func (p *Publisher) logger() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

func note(pl plan.Plan) string {
	switch pl.Status {
	case plan.StatusRefused:
		var rs []string
		for _, r := range pl.Refusals {
			rs = append(rs, r.Rule+": "+r.Reason)
		}
		return "refused: " + strings.Join(rs, "; ")
	case plan.StatusWaiting:
		var ws []string
		for _, g := range pl.Waiting {
			ws = append(ws, g.Description)
		}
		return "waiting: " + strings.Join(ws, "; ")
	case plan.StatusConverged:
		return "converged: the cluster runs what its spec asks for"
	}
	return ""
}

// renderFunc renders a plan's first step, as Publisher.Render does.
type renderFunc func() (renderer.Tree, renderer.Built, error)

// stageStep renders the step and stages its branch's commit for the
// pass's push. A step merged or declined in this cycle publishes nothing
// (identity.go); a branch holding a person's commit is left alone
// (foreign.go), with the *gitrepo.ForeignError in the stepJob.
func (p *Publisher) stageStep(ctx context.Context, c spec.Cluster, pl plan.Plan, base *object.Commit, prs []PullRequest, render renderFunc) (*stepJob, error) {
	pr := existing(prs, Branch(pl.Cluster.Name, pl.Steps[0].ID))
	if action := p.standing(ctx, pl, base, pr); action != "" {
		return &stepJob{action: action}, nil
	}
	s := pl.Steps[0]
	tree, built, err := render()
	if err != nil {
		return nil, err
	}
	root := renderer.Root(pl.Cluster.Name)
	staged, err := p.Repo.Stage(ctx, Branch(pl.Cluster.Name, s.ID), func(b *object.Commit) (gitrepo.Change, error) {
		if b.Hash != base.Hash {
			return gitrepo.Change{}, ErrBaseMoved
		}
		return gitrepo.Change{Root: root, Files: tree, Message: commitMessage(pl, base), Name: p.Name, Email: p.Email, OnBase: newCycle(pr)}, nil
	})
	if fe := (*gitrepo.ForeignError)(nil); errors.As(err, &fe) {
		action, pr, err := p.foreignHead(ctx, pr, fe)
		return &stepJob{action: action, pr: pr, err: err}, nil
	}
	if err != nil {
		return nil, err
	}
	return &stepJob{staged: staged, built: built, open: pr}, nil
}

// pullRequest opens or updates the step's pull request once its branch
// is pushed (or held the change already), writing nothing that is there
// already. A push that turned up a person's commit on the branch leaves
// it alone (foreign.go).
func (p *Publisher) pullRequest(ctx context.Context, j *job, base *object.Commit) (Action, *PullRequest, error) {
	st, pl, prs := j.step, j.pl, j.prs
	if st.staged == nil {
		return st.action, st.pr, st.err
	}
	pr, res, built, err := st.open, st.res, st.built, st.err
	if fe := (*gitrepo.ForeignError)(nil); errors.As(err, &fe) {
		return p.foreignHead(ctx, pr, fe)
	}
	if err != nil {
		return "", nil, err
	}
	s := pl.Steps[0]
	// The body names the base the branch was built on, not today's: a
	// commit elsewhere in the repo keeps the branch, and so the body.
	builtOn, gates := res.Base, GateStates(pl, p.Gates)
	if builtOn.IsZero() {
		builtOn = base.Hash
	}
	body := BodyInput{Plan: pl, Wording: p.Wording[pl.Cluster.Kind], SpecCommit: builtOn.String(), Head: res.Commit.String(), Diff: p.stepDiff(built, pl), Gates: gates,
		WebURL: p.webURL(), Previous: previous(p.Repo, pl, base, prs)}
	if p.Live != nil {
		body.Live = p.Live(pl.Cluster)
	}
	want := PullRequest{Branch: Branch(pl.Cluster.Name, s.ID), Title: Title(pl, s), Body: Body(body),
		Head: res.Commit.String(), Labels: Labels(s), Check: StepCheck(pl, s, gates)}
	switch {
	case pr == nil || pr.State != Open:
		opened, err := p.PRs.Open(ctx, want)
		return ActionOpened, opened, err
	case pr.Title == want.Title && WithoutMergeRefusal(pr.Body) == want.Body && pr.Head == want.Head && sameLabels(pr.Labels, want.Labels) && (pr.Check == Check{} || pr.Check == want.Check):
		// A merge refusal noted on it stays: not retried until it changes.
		return ActionUnchanged, pr, nil
	default:
		want.Number, want.State = pr.Number, Open
		want.Labels = withOthers(pr.Labels, want.Labels)
		return ActionUpdated, &want, p.PRs.Update(ctx, want)
	}
}

// stepDiff is the change of the step's built manifests against what runs.
func (p *Publisher) stepDiff(built renderer.Built, pl plan.Plan) string {
	var before []byte
	if pl.Baseline != nil {
		before = built.Base
	}
	return p.diffs.diff(before, built.Selected)
}

func commitMessage(pl plan.Plan, base *object.Commit) string {
	s := pl.Steps[0]
	return fmt.Sprintf("cairn: %s: %s\n\nStep 1 of %d of plan %s: %s, disruptive: %s, reversible: %s.\n\nCairn-Cluster: %s\nCairn-Step: %s\nCairn-Plan: %s\nCairn-Spec-Commit: %s\n",
		pl.Cluster.Name, s.Summary, len(pl.Steps), pl.ID, s.Kind, yesNo(s.Disruptive), yesNo(s.Reversible),
		pl.Cluster, s.ID, pl.ID, base.Hash)
}

// sameLabels compares the cairn labels of two label sets, in any order:
// providers do not keep the order, and people add labels of their own.
func sameLabels(have, want []string) bool {
	return slices.Equal(cairnLabels(have), cairnLabels(want))
}

func cairnLabels(labels []string) []string {
	var out []string
	for _, l := range labels {
		if l == "cairn" || strings.HasPrefix(l, "cairn/") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// withOthers is want's cairn labels plus the labels people added.
func withOthers(have, want []string) []string {
	out := cairnLabels(want)
	for _, l := range have {
		if l != "cairn" && !strings.HasPrefix(l, "cairn/") && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}
