package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/reconcile"
	"github.com/cairn-dev/cairn/reconcile/shard"
	"github.com/cairn-dev/cairn/renderer"
)

// reconcileOptions are cairn reconcile's flags.
type reconcileOptions struct {
	remote                           remoteOptions
	gh                               githubOptions
	src                              liveSource
	specs                            specsFlag
	images                           renderer.Options
	webhookAddr, secretFile, metrics string
	interval                         time.Duration
	shard                            shardOptions
}

func newReconcile() *cobra.Command {
	var o reconcileOptions
	cmd := &cobra.Command{
		Use:   "reconcile --repo URL|DIR [--live FILE] [--interval 1m] [--webhook-addr :8080] [--metrics-addr :9090]",
		Short: "Run cairn's loop: propose each next step once the last merged one shows done in the live state",
		Long: `Every --interval, and on each GitHub push or pull_request webhook (signed
with the secret in --webhook-secret-file or $CAIRN_WEBHOOK_SECRET), plan
every cluster and publish its next step as cairn propose does, but hold a
cluster while the step merged last has not shown its gates in the live
state (--live, read again on every pass). Steps a policy lets cairn merge
are merged at the end of a pass, as cairn propose does (--no-auto-merge
turns that off).

Each pass prints what changed since the pass before, one line a cluster,
stamped with the time (RFC 3339); a pass that changes nothing prints
nothing. With --metrics-addr it serves /metrics (docs/metrics.md),
/healthz and /readyz (ready once a pass has succeeded, while the last
pass is at most three intervals old). SIGINT or SIGTERM stops it cleanly,
the pass under way abandoned, with exit status 0.

With --shards N (N > 1) it runs as one replica of several: the clusters
are spread over N shards held in Kubernetes Leases (in --lease-namespace),
each replica publishes only the clusters of the shards it holds, and a
replica's shards move to the others when it stops or dies
(docs/sharding.md).`,
		Example: `  # the loop over a local repo, with the live state of a file
  cairn reconcile --repo ./gitops --live live.yaml

  # on GitHub, every 5 minutes and on each webhook, with metrics and health
  cairn reconcile --repo https://github.com/org/gitops.git --github org/gitops \
    --interval 5m --webhook-addr :8080 --webhook-secret-file /etc/cairn/webhook \
    --metrics-addr :9090

  # one replica of several in a Kubernetes cluster (deploy/reconcile)
  cairn reconcile --repo https://github.com/org/gitops.git --github org/gitops \
    --in-cluster --shards 32 --metrics-addr :9090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.remote.flags(cmd, true)
	o.src.flags(cmd.Flags())
	o.specs.add(cmd.Flags())
	cmd.Flags().DurationVar(&o.interval, "interval", time.Minute, "time between passes")
	cmd.Flags().StringVar(&o.webhookAddr, "webhook-addr", "", "address to accept GitHub webhooks on, such as :8080")
	cmd.Flags().StringVar(&o.secretFile, "webhook-secret-file", "", "file holding the webhook secret")
	cmd.Flags().StringVar(&o.metrics, "metrics-addr", "", "address to serve /metrics, /healthz and /readyz on, such as :9090; empty serves none")
	o.gh.flags(cmd)
	o.shard.flags(cmd.Flags())
	imageFlags(cmd.Flags(), &o.images)
	monitoringFlags(cmd.Flags(), &o.images)
	return cmd
}

// run runs the loop until the command's context ends (SIGINT or SIGTERM,
// see run in main.go): a clean stop, whatever it interrupts, that returns
// nil.
func (o *reconcileOptions) run(cmd *cobra.Command) error {
	if o.interval <= 0 {
		return &exitError{exitUsage, fmt.Errorf("--interval must be positive, not %s", o.interval)}
	}
	ctx := cmd.Context()
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	var reg *prometheus.Registry
	if o.metrics != "" {
		var err error
		if reg, err = newProcessRegistry(); err != nil {
			return err
		}
	}
	// A nil *Registry in the Registerer would not be a nil interface.
	var registerer prometheus.Registerer
	if reg != nil {
		registerer = reg
	}
	member, err := o.shard.member(o.src, log)
	if err != nil {
		return err
	}
	r, cleanup, err := newMemberReconciler(ctx, o.remote, o.gh, o.src, o.specs, o.images, log, registerer, member)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while cloning
		}
		return err
	}
	defer cleanup()
	if o.metrics != "" {
		l, err := net.Listen("tcp", o.metrics)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		defer serveHTTP(l, r.metrics.Handler(reg, o.interval, nil), log)()
	}
	trigger := make(chan struct{}, 1)
	hook := trigger
	if member != nil {
		var stop func(error)
		hook, stop = runMember(ctx, member, o.shard.duration, trigger, log)
		defer stop(nil) // after the loop has stopped: see shard.Member.Run
	}
	if o.webhookAddr != "" {
		stop, _, err := serveWebhook(o.webhookAddr, o.secretFile, o.remote.base, hook, log, registerer)
		if err != nil {
			return err
		}
		defer stop()
	}
	p := &changePrinter{w: cmd.OutOrStdout(), now: time.Now}
	return r.Run(ctx, o.interval, trigger, p.print)
}

// serveWebhook serves reconcile.Webhook on addr, with its bounds
// (Webhook.Server), until stop; its metrics go to reg when it is not nil.
// It returns the address it listens on.
func serveWebhook(addr, secretFile, base string, trigger chan<- struct{}, log *slog.Logger, reg prometheus.Registerer) (stop func(), bound string, err error) {
	secret, err := gitrepo.ReadToken(secretFile, "CAIRN_WEBHOOK_SECRET")
	if err != nil {
		return nil, "", &exitError{exitInvalid, fmt.Errorf("--webhook-secret-file: %w", err)}
	}
	if secret == "" {
		return nil, "", &exitError{exitUsage, fmt.Errorf("--webhook-addr needs a secret: --webhook-secret-file or $CAIRN_WEBHOOK_SECRET")}
	}
	hook := &reconcile.Webhook{Secret: []byte(secret), Base: base, Trigger: trigger, Log: log}
	if reg != nil {
		if hook.Metrics, err = reconcile.NewWebhookMetrics(reg); err != nil {
			return nil, "", err
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("webhook listener: %w", err)
	}
	srv := hook.Server(addr)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("webhook server stopped", "err", err.Error())
		}
	}()
	return func() { srv.Close() }, l.Addr().String(), nil
}

// reconciler is cairn reconcile's loop, as the end-to-end tests drive it,
// with its metrics (nil without a registry).
type reconciler struct {
	*reconcile.Loop
	metrics *reconcile.Metrics
}

// pass is one round of the loop.
func (r *reconciler) pass(ctx context.Context) ([]publish.Outcome, error) {
	res, err := r.Pass(ctx)
	return res.Outcomes, cliError(err)
}

func newReconciler(ctx context.Context, o remoteOptions, gh githubOptions, src liveSource, specs specsFlag, images renderer.Options, log *slog.Logger) (*reconciler, func(), error) {
	return newReconcilerWith(ctx, o, gh, src, specs, images, log, nil)
}

// newReconcilerWith is newReconciler with the loop's metrics registered
// with reg when it is not nil: reconcile.Metrics, and reconcile.GitHubMetrics
// when the pull requests are on GitHub.
func newReconcilerWith(ctx context.Context, o remoteOptions, gh githubOptions, src liveSource, specs specsFlag, images renderer.Options, log *slog.Logger,
	reg prometheus.Registerer) (*reconciler, func(), error) {
	return newMemberReconciler(ctx, o, gh, src, specs, images, log, reg, nil)
}

// newMemberReconciler is newReconcilerWith for one replica of a sharded
// fleet when member is set: the loop publishes the clusters member owns,
// and spends its share of the GitHub budget.
func newMemberReconciler(ctx context.Context, o remoteOptions, gh githubOptions, src liveSource, specs specsFlag, images renderer.Options, log *slog.Logger,
	reg prometheus.Registerer, member *shard.Member) (*reconciler, func(), error) {
	rend, err := newRenderer(images)
	if err != nil {
		return nil, nil, err
	}
	repo, cleanup, err := o.clone(ctx)
	if err != nil {
		return nil, nil, err
	}
	gh.insecureHTTP = o.insecureHTTP
	prs, _, err := gh.provider(repo, o.base, log)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	cfg := loopConfig(repo, prs, rend, src, specs, log)
	cfg.Hold, cfg.AutoMerge = true, !gh.noAutoMerge
	if reg != nil {
		if cfg.Metrics, err = loopMetrics(reg, prs); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	if member != nil {
		cfg.Owns = member.Owns
		// After loopMetrics: the metrics count only the calls sent.
		if gp, ok := prs.(*githubpr.Provider); ok {
			gp.ShareBudget(member.Replicas)
		}
	}
	return &reconciler{Loop: reconcile.New(cfg), metrics: cfg.Metrics}, cleanup, nil
}

// loopMetrics registers the loop's metrics with reg, and the GitHub
// ones when prs is the GitHub provider (fed by its Observe).
func loopMetrics(reg prometheus.Registerer, prs publish.Provider) (*reconcile.Metrics, error) {
	m, err := reconcile.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	if gp, ok := prs.(*githubpr.Provider); ok {
		gm, err := reconcile.NewGitHubMetrics(reg)
		if err != nil {
			return nil, err
		}
		gp.Observe(gm.Observe)
	}
	return m, nil
}

// loopConfig wires the loop of cairn propose and cairn reconcile: the
// kinds' planner and renderer, the live source, the policies of the
// checkout and planner/gates, deciding at --now.
func loopConfig(repo *gitrepo.Repo, prs publish.Provider, rend *renderer.Renderer, src liveSource, specs specsFlag, log *slog.Logger) reconcile.Config {
	// Across the passes of cairn reconcile, only clusters whose spec or
	// plan changed are rendered and built again.
	return loopConfigWith(repo, prs, rend, renderer.NewCache(rend, 0), src, specs, log)
}

// loopConfigWith is loopConfig rendering through cache, a cache over rend
// (cairn propose's has a second level on disk).
func loopConfigWith(repo *gitrepo.Repo, prs publish.Provider, rend *renderer.Renderer, cache *renderer.Cache, src liveSource, specs specsFlag, log *slog.Logger) reconcile.Config {
	return reconcile.Config{
		Repo: repo, PRs: prs, Name: "cairn", Email: cairnEmail,
		Layout:     specs.layout(""),
		Specs:      specKinds(),
		Wording:    wordings(),
		Observe:    src.read,
		Policies:   policySet,
		Plan:       newPlanner().WithImages(rend.Images).Plan,
		Render:     cache.Render,
		PassStarts: cache.NewPass,
		Gates:      stepGates{},
		Now:        time.Now,
		DecideAt:   func() time.Time { return clock() },
		Log:        log,
	}
}

// cliError gives a pass's error its exit code: invalid specs on the base
// branch are invalid input.
func cliError(err error) error {
	if inv := (*reconcile.InvalidSpecsError)(nil); errors.As(err, &inv) {
		return &exitError{exitInvalid, err}
	}
	return err
}

// stepGates are the loop's gates: planner/gates.
type stepGates struct{}

func (stepGates) Before(s plan.Step, c spec.Cluster, obs *live.Cluster, now time.Time) (bool, string) {
	return gates.Pass(gates.For(liveKinds()).Before(s, c, obs, now))
}

func (stepGates) After(s plan.Step, c spec.Cluster, obs *live.Cluster, now time.Time) (bool, string) {
	return gates.Pass(gates.For(liveKinds()).After(s, c, obs, now))
}

// changePrinter prints what each pass changed: the outcomes that differ
// from the same cluster's in the pass before, and the clusters gone from
// the plans, each line stamped with the time (RFC 3339). A pull request
// opened, updated, merged or closed is always news; a cluster that stays
// as it was (unchanged, held for the same reason, failing the same way)
// is printed once.
type changePrinter struct {
	w    io.Writer
	now  func() time.Time
	last map[string]publish.Outcome
	// headed: the column header has been printed.
	headed bool
}

func (p *changePrinter) print(outcomes []publish.Outcome) {
	at := p.now().Format(time.RFC3339)
	var lines [][]string
	seen := make(map[string]bool, len(outcomes))
	for _, o := range outcomes {
		seen[o.Cluster] = true
		if prev, ok := p.last[o.Cluster]; ok && !news(prev, o) {
			continue
		}
		step, note := o.Step, o.Note
		if step == "" {
			step = "-"
		}
		if len(o.Closed) > 0 {
			note = fmt.Sprintf("closed %v %s", o.Closed, note)
		}
		lines = append(lines, []string{at, o.Cluster, string(o.Status), step, string(o.Action), note})
	}
	for _, c := range slices.Sorted(maps.Keys(p.last)) {
		if !seen[c] {
			lines = append(lines, []string{at, c, "-", "-", "-", "no longer planned: no spec and nothing running"})
		}
	}
	p.last = make(map[string]publish.Outcome, len(outcomes))
	for _, o := range outcomes {
		p.last[o.Cluster] = o
	}
	if len(lines) == 0 {
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	if !p.headed {
		fmt.Fprintln(tw, "TIME\tCLUSTER\tSTATUS\tSTEP\tPULL REQUEST\tNOTE")
		p.headed = true
	}
	for _, l := range lines {
		fmt.Fprintln(tw, strings.TrimRight(strings.Join(l, "\t"), "\t"))
	}
	tw.Flush()
}

// news reports whether o, a cluster's outcome of this pass, is worth a
// line after prev, its outcome of the pass before.
func news(prev, o publish.Outcome) bool {
	switch {
	case len(o.Closed) > 0:
		return true
	case o.Action == publish.ActionOpened, o.Action == publish.ActionUpdated, o.Action == publish.ActionAutoMerged:
		return true
	}
	// A pull request opened or updated in the pass before and unchanged
	// now stands as it was.
	standing := func(a publish.Action) publish.Action {
		if a == publish.ActionOpened || a == publish.ActionUpdated {
			return publish.ActionUnchanged
		}
		return a
	}
	return prev.Status != o.Status || prev.Step != o.Step || prev.Branch != o.Branch || prev.Note != o.Note ||
		standing(prev.Action) != standing(o.Action)
}
