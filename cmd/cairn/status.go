package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/renderer"
)

type statusOptions struct {
	remote remoteOptions
	gh     githubOptions
	src    liveSource
	specs  specsFlag
	images renderer.Options
	output *outputFlag
}

func newStatus() *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use:   "status [CLUSTER] --repo DIR|URL [--live FILE | --kubeconfig FILE] [-o text|json|yaml]",
		Short: "Show what runs and what cairn plans: one cluster, or the fleet",
		Long: `Without CLUSTER: one row per cluster of the repo, with its kind, members
ready of those observed, version, plan status, next step and that step's
pull request. With CLUSTER: its members (role, version, ready), its last
backup and its age, the step merged last (the one rendered/<cluster>/
selects) and whether its gates after it hold, the next step with its pull
request, its gates before it and the policies that hold it, and refusals.

The specs are read from --repo as cairn plan reads them (a checkout as it
is, uncommitted edits too) or, for a bare repo or a URL, from its --base
branch; pull requests from the local provider's records in that repo, or
from GitHub with --github. The live state comes from --live, or from the
Kubernetes cluster found as kubectl finds it (--kubeconfig, $KUBECONFIG,
~/.kube/config, the pod's ServiceAccount). Shows only what the live state
holds: what it does not report is shown as not observed.

On a terminal the columns are aligned and coloured ($NO_COLOR turns colour
off); piped, they are separated by tabs.

Exit codes: 0 shown, 1 invalid specs or live state, 2 usage (CLUSTER is
not in the specs), 3 a shown plan refuses a spec change.`,
		Example: `  # the fleet, live state from the current kubeconfig context
  cairn status --repo .

  # one cluster, against a recorded live state
  cairn status my-production-db --repo . --live live.yaml

  # the fleet as JSON, pull requests from GitHub
  cairn status --repo https://github.com/acme/gitops.git --github acme/gitops -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args)
		},
	}
	o.remote.flags(cmd, false)
	o.src.flags(cmd.Flags())
	o.specs.add(cmd.Flags())
	imageFlags(cmd.Flags(), &o.images)
	f := cmd.Flags()
	f.StringVar(&o.gh.repo, "github", "", "OWNER/REPO: read pull requests from GitHub instead of the repo's records")
	f.StringVar(&o.gh.api, "github-api", "", "GitHub API URL (GitHub Enterprise: https://HOST/api/v3/)")
	f.StringVar(&o.gh.tokenFile, "github-token-file", "", "file holding the GitHub token (default: $GITHUB_TOKEN)")
	o.output = addOutput(cmd, formatText, formatJSON, formatYAML)
	return cmd
}

// clusterStatus is one cluster as cairn status shows it; -o json and yaml
// write it as it is.
type clusterStatus struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Observed is false when nothing of the cluster runs (or the live
	// state does not hold it).
	Observed bool           `json:"observed"`
	Members  []memberStatus `json:"members"`
	Ready    int            `json:"ready"`
	// Desired is the member count the spec asks for.
	Desired int `json:"desired"`
	// Versions are the members' versions, distinct, in member order; the
	// StatefulSet's when no member is observed.
	Versions []string    `json:"versions"`
	Backup   *backupView `json:"backup,omitempty"`
	Plan     planStatus  `json:"plan"`
	// Rendered is what rendered/<name>/ selects: "step" (Current), "base",
	// or "absent" when the repo has no rendered tree of the cluster.
	Rendered string `json:"rendered"`
	// Current is the step the rendered entry point selects: merged last.
	Current *stepStatus `json:"current,omitempty"`
	// Next is the plan's first step.
	Next *stepStatus `json:"next,omitempty"`
	// PullRequestsFrom says where pull requests were read, or why none
	// were.
	PullRequestsFrom string `json:"pullRequestsFrom"`
}

type memberStatus struct {
	Name       string `json:"name"`
	Role       string `json:"role"`
	Version    string `json:"version"`
	Ready      bool   `json:"ready"`
	ReadySince string `json:"readySince,omitempty"`
	// Lag is a PostgreSQL replica's contract.LagClass, as its runtime last
	// reported it; empty with --live, for a primary and for etcd.
	Lag string `json:"lag,omitempty"`
}

type backupView struct {
	Schedule        string `json:"schedule,omitempty"`
	TimeZone        string `json:"timeZone,omitempty"`
	StorageLocation string `json:"storageLocation,omitempty"`
	LastSuccessful  string `json:"lastSuccessful,omitempty"`
	// Age is how long ago LastSuccessful was, at --now.
	Age   string `json:"age,omitempty"`
	Stale bool   `json:"stale,omitempty"`
	// WALArchive: the members' rendered config archives WAL
	// (archive_mode on among the observed parameters).
	WALArchive bool `json:"walArchive,omitempty"`
}

type planStatus struct {
	ID       string         `json:"id"`
	Status   plan.Status    `json:"status"`
	Steps    int            `json:"steps"`
	Waiting  []string       `json:"waiting,omitempty"`
	Refusals []plan.Refusal `json:"refusals,omitempty"`
	Notes    []plan.Note    `json:"notes,omitempty"`
}

type stepStatus struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
	// Flags are those cairn plan shows (disruptive, irreversible, holds).
	Flags string `json:"flags"`
	// Gates are the step's gates before it (Next) or after it
	// (Current), each with whether it holds and why not.
	Gates []gateStatus `json:"gates"`
	// Holds are the policies' verdicts other than Allow.
	Holds       []plan.Decision `json:"holds,omitempty"`
	PullRequest *prStatus       `json:"pullRequest,omitempty"`
	// Note says why the step is not in its plan, for Current.
	Note string `json:"note,omitempty"`
}

type gateStatus struct {
	Description string `json:"description"`
	Pass        bool   `json:"pass"`
	Reason      string `json:"reason,omitempty"`
}

type prStatus struct {
	Branch string        `json:"branch"`
	State  publish.State `json:"state"`
	Number int           `json:"number,omitempty"`
	URL    string        `json:"url,omitempty"`
	Title  string        `json:"title,omitempty"`
}

func runStatus(ctx context.Context, w, errw io.Writer, o statusOptions, args []string) error {
	format, err := o.output.get("cairn status")
	if err != nil {
		return err
	}
	rend, err := newRenderer(o.images)
	if err != nil {
		return &exitError{exitUsage, fmt.Errorf("cairn status: %w", err)}
	}
	repo, err := openStatusRepo(ctx, o.remote, o.gh, slog.New(slog.NewTextHandler(errw, nil)))
	if err != nil {
		return err
	}
	defer repo.cleanup()
	clusters, err := loadClusters("cairn status", repo.dir, o.specs.layout(""), args)
	if err != nil {
		return err
	}
	observed, err := o.src.readAny(ctx, clusters)
	if err != nil {
		return err
	}
	pols, err := policySet(repo.dir)
	if err != nil {
		return err
	}
	now := clock()
	plans := newPlanner().WithImages(rend.Images).Plan(clusters, observed, pols)
	out := make([]clusterStatus, len(clusters))
	lags, err := o.src.lags(ctx, clusters)
	if err != nil {
		return err
	}
	for i, c := range clusters {
		out[i] = gatherStatus(c, find(plans, c.Ref()), observed.Find(c.Ref().Kind, c.Ref().Name), repo, now)
		for j, m := range out[i].Members {
			out[i].Members[j].Lag = lags[c.Ref().Name][m.Name]
		}
	}
	switch {
	case format != formatText && len(args) == 1:
		err = writeData(w, format, out[0])
	case format != formatText:
		err = writeData(w, format, out)
	case len(args) == 1:
		err = writeClusterStatus(w, styleOf(w), out[0])
	default:
		err = writeFleetStatus(w, styleOf(w), out)
	}
	if err != nil {
		return err
	}
	for _, s := range out {
		if s.Plan.Status == plan.StatusRefused {
			return &exitError{code: exitRefusals}
		}
	}
	return nil
}

// loadClusters reads the specs of dir (layout), all of them, or the one
// args names: a name the specs do not have is a usage error of command.
func loadClusters(command, dir string, layout spec.Layout, args []string) ([]spec.Cluster, error) {
	clusters, err := specKinds().LoadRepo(dir, layout)
	if err != nil {
		return nil, &exitError{exitInvalid, err}
	}
	if len(args) == 0 {
		return clusters, nil
	}
	var names []string
	for _, c := range clusters {
		if c.Ref().Name == args[0] || c.Ref().String() == args[0] {
			return []spec.Cluster{c}, nil
		}
		names = append(names, c.Ref().Name)
	}
	have := "the repo has none"
	if len(names) > 0 {
		have = "it has " + strings.Join(names, ", ")
	}
	return nil, &exitError{exitUsage, fmt.Errorf("%s: no cluster %q in the repo's specs (%s)", command, args[0], have)}
}

// gatherStatus puts together what status shows of one cluster at now.
func gatherStatus(c spec.Cluster, p plan.Plan, obs *live.Cluster, repo *statusRepo, now time.Time) clusterStatus {
	ref := c.Ref()
	s := clusterStatus{Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace, Observed: obs != nil,
		Members: []memberStatus{}, Versions: []string{}, Desired: c.Common().Members, PullRequestsFrom: repo.prsFrom}
	s.Plan = planStatus{ID: p.ID, Status: p.Status, Steps: len(p.Steps), Refusals: p.Refusals, Notes: p.Notes}
	for _, g := range p.Waiting {
		s.Plan.Waiting = append(s.Plan.Waiting, g.Description)
	}
	if obs != nil {
		for _, m := range obs.Members {
			s.Members = append(s.Members, memberStatus{Name: m.Name, Role: string(m.Role), Version: m.Version, Ready: m.Ready, ReadySince: string(m.ReadySince)})
			if m.Ready {
				s.Ready++
			}
			if m.Version != "" && !slices.Contains(s.Versions, m.Version) {
				s.Versions = append(s.Versions, m.Version)
			}
		}
		if len(s.Versions) == 0 && obs.StatefulSet.Version != "" {
			s.Versions = append(s.Versions, obs.StatefulSet.Version)
		}
		if b := obs.Backup; b != nil {
			s.Backup = &backupView{Schedule: b.Schedule, TimeZone: b.TimeZone, StorageLocation: b.StorageLocation,
				LastSuccessful: string(b.LastSuccessful), Stale: b.Stale, WALArchive: obs.Parameters["archive_mode"] == "'on'"}
			if t := b.LastSuccessful.Time(); !t.IsZero() {
				s.Backup.Age = age(now.Sub(t))
			}
		}
	}
	s.Rendered = "absent"
	if e, err := renderer.ReadEntry(repo.read, ref.Name); e.Step == "" && err == nil {
		s.Rendered = "base"
	} else if e.Step != "" {
		s.Rendered = "step"
		cur := &stepStatus{ID: e.Step, PullRequest: repo.pr(publish.Branch(ref.Name, e.Step))}
		if step, ok := e.Selected(); err == nil && ok {
			cur.Summary, cur.Flags = step.Summary, flags(step)
			cur.Gates = gateStatuses(gates.For(liveKinds()).After(step, c, obs, now))
		} else {
			cur.Note = fmt.Sprintf("not in %s/plan.json", renderer.Root(ref.Name))
			if err != nil {
				cur.Note = err.Error()
			}
		}
		s.Current = cur
	}
	if len(p.Steps) > 0 {
		step := p.Steps[0]
		next := &stepStatus{ID: step.ID, Summary: step.Summary, Flags: flags(step),
			Gates: gateStatuses(gates.For(liveKinds()).Before(step, c, obs, now)), PullRequest: repo.pr(publish.Branch(ref.Name, step.ID))}
		for _, d := range step.Decisions {
			if d.Verdict != plan.Allow {
				next.Holds = append(next.Holds, d)
			}
		}
		s.Next = next
	}
	return s
}

func gateStatuses(results []gates.Result) []gateStatus {
	out := []gateStatus{}
	for _, r := range results {
		out = append(out, gateStatus{Description: r.Gate.Description, Pass: r.Pass, Reason: r.Reason})
	}
	return out
}

// age is a duration as a person reads an age: 45s, 12m, 3h10m, 2d4h.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	}
	days := int(d.Hours()) / 24
	if h := int(d.Hours()) % 24; h != 0 {
		return fmt.Sprintf("%dd%dh", days, h)
	}
	return fmt.Sprintf("%dd", days)
}
