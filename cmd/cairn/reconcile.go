package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/reconcile"
	"github.com/cairn-dev/cairn/renderer"
)

func newReconcile() *cobra.Command {
	var o remoteOptions
	var gh githubOptions
	var src liveSource
	var addr, secretFile string
	var specs specsFlag
	var images renderer.Options
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "reconcile --repo URL|DIR [--live FILE] [--interval 1m] [--webhook-addr :8080]",
		Short: "Run cairn's loop: propose each next step once the last merged one shows done in the live state",
		Long: `Every --interval, and on each GitHub push or pull_request webhook (signed
with the secret in --webhook-secret-file or $CAIRN_WEBHOOK_SECRET), plan
every cluster and publish its next step as cairn propose does, but hold a
cluster while the step merged last has not shown its gates in the live
state (--live, read again on every pass). Steps a policy lets cairn merge
are merged at the end of a pass, as cairn propose does (--no-auto-merge
turns that off).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			r, cleanup, err := newReconciler(ctx, o, gh, src, specs, images, log)
			if err != nil {
				return err
			}
			defer cleanup()
			trigger := make(chan struct{}, 1)
			if addr != "" {
				stop, err := serveWebhook(addr, secretFile, o.base, trigger, log)
				if err != nil {
					return err
				}
				defer stop()
			}
			w := cmd.OutOrStdout()
			return r.Run(ctx, interval, trigger, func(out []publish.Outcome) { printOutcomes(w, out) })
		},
	}
	o.flags(cmd, true)
	src.flags(cmd.Flags())
	specs.add(cmd.Flags())
	cmd.Flags().DurationVar(&interval, "interval", time.Minute, "time between passes")
	cmd.Flags().StringVar(&addr, "webhook-addr", "", "address to accept GitHub webhooks on, such as :8080")
	cmd.Flags().StringVar(&secretFile, "webhook-secret-file", "", "file holding the webhook secret")
	gh.flags(cmd)
	imageFlags(cmd.Flags(), &images)
	return cmd
}

// serveWebhook serves reconcile.Webhook on addr until stop.
func serveWebhook(addr, secretFile, base string, trigger chan<- struct{}, log *slog.Logger) (stop func(), err error) {
	secret, err := gitrepo.ReadToken(secretFile, "CAIRN_WEBHOOK_SECRET")
	if err != nil || secret == "" {
		return nil, &exitError{exitUsage, fmt.Errorf("--webhook-addr needs a secret: --webhook-secret-file or $CAIRN_WEBHOOK_SECRET")}
	}
	srv := &http.Server{Addr: addr, Handler: &reconcile.Webhook{Secret: []byte(secret), Base: base, Trigger: trigger, Log: log},
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("webhook server stopped", "err", err.Error())
		}
	}()
	return func() { srv.Close() }, nil
}

// reconciler is cairn reconcile's loop, as the end-to-end tests drive it.
type reconciler struct{ *reconcile.Loop }

// pass is one round of the loop.
func (r *reconciler) pass(ctx context.Context) ([]publish.Outcome, error) {
	res, err := r.Pass(ctx)
	return res.Outcomes, cliError(err)
}

func newReconciler(ctx context.Context, o remoteOptions, gh githubOptions, src liveSource, specs specsFlag, images renderer.Options, log *slog.Logger) (*reconciler, func(), error) {
	rend, err := newRenderer(images)
	if err != nil {
		return nil, nil, err
	}
	repo, cleanup, err := o.clone(ctx)
	if err != nil {
		return nil, nil, err
	}
	prs, _, err := gh.provider(repo, o.base, log)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	cfg := loopConfig(repo, prs, rend, src, specs, log)
	cfg.Hold, cfg.AutoMerge = true, !gh.noAutoMerge
	return &reconciler{reconcile.New(cfg)}, cleanup, nil
}

// loopConfig wires the loop of cairn propose and cairn reconcile: the
// kinds' planner and renderer, the live source, the policies of the
// checkout and planner/gates, deciding at --now.
func loopConfig(repo *gitrepo.Repo, prs publish.Provider, rend *renderer.Renderer, src liveSource, specs specsFlag, log *slog.Logger) reconcile.Config {
	return reconcile.Config{
		Repo: repo, PRs: prs, Name: "cairn", Email: cairnEmail,
		Layout:   specs.layout(""),
		Observe:  src.read,
		Policies: policySet,
		Plan:     newPlanner().WithImages(rend.Images).Plan,
		Render:   rend.Render,
		Gates:    stepGates{},
		Now:      time.Now,
		DecideAt: func() time.Time { return clock() },
		Log:      log,
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
	return gates.Pass(gates.Before(s, c, obs, now))
}

func (stepGates) After(s plan.Step, c spec.Cluster, obs *live.Cluster, now time.Time) (bool, string) {
	return gates.Pass(gates.After(s, c, obs, now))
}
