package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
)

// Config wires a Loop. Every field is required but Wording, Hold,
// AutoMerge, Now, DecideAt, Log, Metrics, PassStarts and Owns.
type Config struct {
	// Repo is the clone of the GitOps repo: its base branch holds the
	// specs (at Layout) and the policies.
	Repo *gitrepo.Repo
	// PRs holds the steps' pull requests (publish.Local, or GitHub).
	PRs publish.Provider
	// Name and Email sign cairn's commits.
	Name, Email string
	// Layout says where the specs are in the repo.
	Layout spec.Layout
	// Specs are the kinds of specs the loop reads; a spec of another kind
	// is invalid.
	Specs spec.Served
	// Wording is publish.Publisher.Wording: what pull requests say of
	// each kind.
	Wording map[string]publish.Wording
	// Observe reads the live state of the clusters; a nil snapshot when
	// nothing is observed.
	Observe func(ctx context.Context, clusters []spec.Cluster) (*live.Snapshot, error)
	// Policies returns the policies in force for the checkout at dir.
	Policies func(dir string) (policies.Set, error)
	// Plan plans every cluster against the live state: the planner of the
	// kinds cairn serves.
	Plan func(desired []spec.Cluster, observed *live.Snapshot, pols policies.Set) plan.List
	// Render renders a cluster's tree for a plan, selecting a step, with
	// its builds (renderer.Renderer.Render).
	Render func(c spec.Cluster, p plan.Plan, step string) (renderer.Tree, renderer.Built, error)
	// RenderWorkers is publish.Publisher.RenderWorkers: 0 renders a
	// pass's steps on every core.
	RenderWorkers int
	// Gates checks the steps' gates in the live state.
	Gates Gates
	// Hold holds a cluster while the step merged last has not shown its
	// "after" gates in the live state (cairn reconcile); without it a pass
	// publishes whatever was merged before (cairn propose).
	Hold bool
	// AutoMerge lets a pass merge the steps a policy lets cairn merge, once
	// their "before" gates pass and no policy holds them.
	AutoMerge bool
	// Now is the time the hold rule checks the merged step's gates at;
	// default time.Now.
	Now func() time.Time
	// DecideAt is the time the policies decide at (cairn's --now), at
	// which auto-merge checks the next step's "before" gates; default
	// time.Now.
	DecideAt func() time.Time
	// Log gets the failures of passes and of publishing; default discard.
	Log *slog.Logger
	// Metrics, when set, get every pass (NewMetrics); the clock is Now.
	Metrics *Metrics
	// PassStarts, when set, is called as each pass starts (the render
	// cache starts a generation: renderer.Cache.NewPass).
	PassStarts func()
	// Owns, when set, says whether this replica owns a cluster now (a
	// shard of the fleet, see reconcile/shard): a pass publishes only the
	// clusters it owns, and asks again before each cluster's writes, so a
	// shard lost in the middle of a pass is not written to. nil: every
	// cluster is this replica's.
	Owns func(ref plan.ClusterRef) bool
}

// Loop runs passes with one Config.
type Loop struct {
	cfg Config
	pub *publish.Publisher
	// others remembers the status set on others' pull requests
	// (others.go).
	others *checked
	// pass is the context of the pass under way: once it has ended, the
	// log drops the failures the stop causes (stopLog).
	pass *atomic.Pointer[context.Context]
}

// New returns the loop of cfg.
func New(cfg Config) *Loop {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DecideAt == nil {
		cfg.DecideAt = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	pass := new(atomic.Pointer[context.Context])
	cfg.Log = slog.New(stopLog{cfg.Log.Handler(), pass})
	pub := &publish.Publisher{Repo: cfg.Repo, PRs: cfg.PRs, Render: cfg.Render, RenderWorkers: cfg.RenderWorkers, Name: cfg.Name, Email: cfg.Email, Wording: cfg.Wording, Log: cfg.Log}
	return &Loop{cfg: cfg, pub: pub, pass: pass, others: &checked{}}
}

// Result is what a pass did: the plans it made on the base branch and
// what happened to each cluster.
type Result struct {
	Outcomes []publish.Outcome
	Plans    plan.List
}

// InvalidSpecsError: the specs on the base branch do not load; nothing is
// planned until a person fixes them.
type InvalidSpecsError struct{ Err error }

func (e *InvalidSpecsError) Error() string { return e.Err.Error() }
func (e *InvalidSpecsError) Unwrap() error { return e.Err }

// Pass is one round of the loop. When the base branch moves while it
// publishes, it plans again on the new base, up to gitrepo.MaxAttempts
// times. One cluster's failure does not hold the others back: the result
// holds every outcome, and the error joins the failures. The pass is
// recorded in Config.Metrics unless ctx ended during it.
func (l *Loop) Pass(ctx context.Context) (Result, error) {
	l.pass.Store(&ctx)
	start := l.cfg.Now()
	for attempt := 1; ; attempt++ {
		var st passState
		res, err := l.once(ctx, &st)
		if errors.Is(err, publish.ErrBaseMoved) && attempt < gitrepo.MaxAttempts {
			if ctx.Err() == nil {
				l.cfg.Metrics.attempted(res)
			}
			continue
		}
		if ctx.Err() == nil {
			l.cfg.Metrics.passed(start, l.cfg.Now(), res, st.planned, st.held, err)
		}
		return res, err
	}
}

// passState is what one attempt at a pass learned besides its Result:
// whether it planned, and the clusters the step merged last held, by that
// step.
type passState struct {
	planned bool
	held    map[string]string
}

// once fetches the base branch, observes its specs' clusters, plans and
// publishes.
func (l *Loop) once(ctx context.Context, st *passState) (Result, error) {
	repo := l.cfg.Repo
	if l.cfg.PassStarts != nil {
		l.cfg.PassStarts()
	}
	// One fetch of the base and of every step branch a pass: publishing
	// then reads them as fetched (a push carries a lease on each).
	if err := repo.FetchBranches(ctx, publish.BranchPrefix); err != nil {
		return Result{}, err
	}
	if err := repo.CheckoutBase(); err != nil {
		return Result{}, err
	}
	base, err := repo.Base()
	if err != nil {
		return Result{}, err
	}
	clusters, err := l.cfg.Specs.LoadRepo(repo.Dir(), l.cfg.Layout)
	if err != nil {
		// A person's pull request may be the fix: it gets its status
		// still, planned against no live state.
		l.checkOthers(ctx, base, nil)
		return Result{}, &InvalidSpecsError{err}
	}
	observed, err := l.cfg.Observe(ctx, clusters)
	if err != nil {
		return Result{}, err
	}
	pols, err := l.cfg.Policies(repo.Dir())
	if err != nil {
		return Result{}, err
	}
	plans := l.cfg.Plan(clusters, observed, pols)
	st.planned, st.held = true, map[string]string{}
	l.pub.Hold, l.pub.MergeGates, l.pub.Gates = nil, nil, l.beforeGates(clusters, observed, l.cfg.DecideAt())
	if l.cfg.Hold {
		l.pub.Hold = l.holdRule(repo.ReadBase, clusters, observed, st.held)
	}
	if l.cfg.AutoMerge {
		l.pub.MergeGates = l.beforeGates(clusters, observed, l.cfg.DecideAt())
	}
	// The bodies show the live state a plan was made against, and a
	// merged step's pull request gets its outcome once its gates hold.
	l.pub.Live = func(ref plan.ClusterRef) *live.Cluster { return observed.Find(ref.Kind, ref.Name) }
	l.pub.After = l.afterGates(clusters, observed, l.cfg.Now)
	l.pub.Now = l.cfg.Now
	l.pub.Owns = l.cfg.Owns
	out, err := l.pub.Publish(ctx, base, clusters, owned(plans, l.cfg.Owns))
	if !errors.Is(err, publish.ErrBaseMoved) {
		// Others' pull requests get their status once cairn's are
		// written.
		l.checkOthers(ctx, base, observed)
	}
	return Result{Outcomes: out, Plans: plans}, err
}

// owned is the plans of the clusters this replica owns.
func owned(plans plan.List, owns func(plan.ClusterRef) bool) plan.List {
	if owns == nil {
		return plans
	}
	out := plans
	out.Plans = nil
	for _, pl := range plans.Plans {
		if owns(pl.Cluster) {
			out.Plans = append(out.Plans, pl)
		}
	}
	return out
}

// Run passes now, then on every tick of interval and on every trigger,
// until ctx ends. report gets the outcomes of each pass, those of the
// clusters that failed too; a pass's error is logged, and the next pass
// tries again. The end of ctx is a clean stop, not a failure: a pass it
// interrupts is neither reported nor logged, and Run returns nil.
func (l *Loop) Run(ctx context.Context, interval time.Duration, trigger <-chan struct{}, report func([]publish.Outcome)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		res, err := l.Pass(ctx)
		if ctx.Err() != nil {
			return nil
		}
		// Every outcome is reported, a failed cluster's with its error.
		if len(res.Outcomes) > 0 {
			report(res.Outcomes)
		}
		if err != nil {
			l.cfg.Log.Error("reconcile pass failed", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-trigger:
		}
	}
}
