package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
)

// reconciler is cairn's long-running loop: a pass plans every cluster and
// publishes its next step, but holds a cluster while the step merged last
// has not shown its "after" gates in the live state.
type reconciler struct {
	repo   *gitrepo.Repo
	pub    *publish.Publisher
	src    liveSource
	layout spec.Layout
	now    func() time.Time
	log    *slog.Logger
	// autoMerge lets the passes merge the steps the policies let cairn merge.
	autoMerge bool
}

// pass is one round of the loop.
func (r *reconciler) pass(ctx context.Context) ([]publish.Outcome, error) {
	// The specs and the observed state of this pass, for Hold.
	var clusters map[string]spec.Cluster
	var observed *live.Snapshot
	observe := func(ctx context.Context, cs []spec.Cluster) (*live.Snapshot, error) {
		clusters = map[string]spec.Cluster{}
		for _, c := range cs {
			clusters[c.Ref().Name] = c
		}
		var err error
		observed, err = r.src.read(ctx, cs)
		return observed, err
	}
	r.pub.Hold = func(pl plan.Plan) (bool, string) {
		return r.held(pl, clusters[pl.Cluster.Name], observed.Find(pl.Cluster.Kind, pl.Cluster.Name))
	}
	for attempt := 1; ; attempt++ {
		out, _, err := proposeWith(ctx, r.repo, r.pub, observe, r.layout, r.autoMerge)
		if errors.Is(err, publish.ErrBaseMoved) && attempt < gitrepo.MaxAttempts {
			continue
		}
		return out, err
	}
}

// held reads the step the base branch's entry point selects (the step
// merged last) and its plan, and holds the cluster until that step's
// "after" gates pass in the live state.
func (r *reconciler) held(pl plan.Plan, c spec.Cluster, obs *live.Cluster) (bool, string) {
	if c == nil {
		return false, ""
	}
	root := renderer.Root(pl.Cluster.Name)
	entry, err := r.repo.ReadBase(root + "/kustomization.yaml")
	if err != nil {
		return false, "" // nothing merged yet
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(entry, &k); err != nil || len(k.Resources) != 1 || !strings.HasPrefix(k.Resources[0], "steps/") {
		return false, ""
	}
	stepID := strings.TrimPrefix(k.Resources[0], "steps/")
	data, err := r.repo.ReadBase(root + "/plan.json")
	if err != nil {
		return true, fmt.Sprintf("merged step %s: its plan.json cannot be read: %v", stepID, err)
	}
	var merged plan.Plan
	if err := json.Unmarshal(data, &merged); err != nil {
		return true, fmt.Sprintf("merged step %s: plan.json: %v", stepID, err)
	}
	if merged.SpecFingerprint != pl.SpecFingerprint {
		// The spec changed since: its plan goes ahead (and supersedes).
		return false, ""
	}
	for _, s := range merged.Steps {
		if s.ID != stepID {
			continue
		}
		if ok, why := gates.Pass(gates.After(s, c, obs, r.now())); !ok {
			return true, fmt.Sprintf("waiting for merged step %s: %s", stepID, why)
		}
		return false, ""
	}
	return true, fmt.Sprintf("merged step %s is not in its plan.json", stepID)
}

// run passes on every tick and on every trigger until ctx ends.
func (r *reconciler) run(ctx context.Context, interval time.Duration, trigger <-chan struct{}, w io.Writer) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		out, err := r.pass(ctx)
		if err != nil {
			r.log.Error("reconcile pass failed", "err", err.Error())
		} else {
			printOutcomes(w, out)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-trigger:
		}
	}
}

// webhook accepts GitHub's push and pull_request events, checks their
// HMAC-SHA256 signature against the shared secret, and triggers a pass.
type webhook struct {
	secret  []byte
	base    string
	trigger chan<- struct{}
	log     *slog.Logger
}

const maxWebhookBody = 5 << 20

func (h *webhook) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxWebhookBody+1))
	if err != nil || len(body) > maxWebhookBody {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	if !validSignature(h.secret, body, req.Header.Get("X-Hub-Signature-256")) {
		h.log.Warn("webhook with a bad signature refused", "remote", req.RemoteAddr)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev struct {
		Ref    string `json:"ref"`
		Action string `json:"action"`
	}
	_ = json.Unmarshal(body, &ev)
	switch event := req.Header.Get("X-GitHub-Event"); {
	case event == "ping":
	case event == "push" && ev.Ref == "refs/heads/"+h.base, event == "pull_request" && ev.Action == "closed":
		select {
		case h.trigger <- struct{}{}:
		default: // a pass is already due
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

// validSignature checks GitHub's "sha256=<hex HMAC of the body>" header in
// constant time.
func validSignature(secret, body []byte, header string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(secret) == 0 {
		return false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}

func newReconcile() *cobra.Command {
	var o remoteOptions
	var gh githubOptions
	var src liveSource
	var specs, addr, secretFile string
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
				secret, err := gitrepo.ReadToken(secretFile, "CAIRN_WEBHOOK_SECRET")
				if err != nil || secret == "" {
					return &exitError{exitUsage, fmt.Errorf("--webhook-addr needs a secret: --webhook-secret-file or $CAIRN_WEBHOOK_SECRET")}
				}
				srv := &http.Server{Addr: addr, Handler: &webhook{secret: []byte(secret), base: o.base, trigger: trigger, log: log},
					ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
				go func() {
					if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
						log.Error("webhook server stopped", "err", err.Error())
					}
				}()
				defer srv.Close()
			}
			return r.run(ctx, interval, trigger, cmd.OutOrStdout())
		},
	}
	o.flags(cmd, true)
	src.flags(cmd.Flags())
	cmd.Flags().StringVar(&specs, "specs", spec.DefaultLayout.SpecsDir, "folder of the repo holding cluster specs")
	cmd.Flags().DurationVar(&interval, "interval", time.Minute, "time between passes")
	cmd.Flags().StringVar(&addr, "webhook-addr", "", "address to accept GitHub webhooks on, such as :8080")
	cmd.Flags().StringVar(&secretFile, "webhook-secret-file", "", "file holding the webhook secret")
	gh.flags(cmd)
	imageFlags(cmd.Flags(), &images)
	return cmd
}

func newReconciler(ctx context.Context, o remoteOptions, gh githubOptions, src liveSource, specs string, images renderer.Options, log *slog.Logger) (*reconciler, func(), error) {
	rend, err := renderer.New(images)
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
	pub := &publish.Publisher{Repo: repo, PRs: prs, Render: rend.Render, Name: "cairn", Email: cairnEmail, Log: log}
	return &reconciler{repo: repo, pub: pub, src: src, layout: spec.Layout{SpecsDir: specs}, now: time.Now, log: log,
		autoMerge: !gh.noAutoMerge}, cleanup, nil
}
