package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/renderer"
)

type planOptions struct {
	repo     string
	src      liveSource
	output   string
	specs    specsFlag
	rendered string
	images   renderer.Options
}

func newPlan() *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan --repo DIR [--live FILE] [-o table|json|yaml]",
		Short: "Plan every cluster of a GitOps repo against the live state",
		Long: `Plan every cluster whose spec is under --specs (default clusters/) in the
repo against the observed state in --live (docs/live-state.md). Without
--live nothing is deployed yet and every cluster gets a create step.

Exit codes: 0 planned, 1 invalid specs or live state, 2 usage, 3 a plan
refuses a spec change (the refusal says which rule and why).`,
		Example: `  # every cluster of the checkout, as if nothing were deployed yet
  cairn plan --repo .

  # against a recorded live state (cairn observe writes one), as JSON
  cairn plan --repo . --live live.yaml -o json

  # against the cluster, deciding policies as at Friday 22:00
  cairn plan --repo . --kubeconfig ~/.kube/prod --now 2026-11-27T22:00:00Z`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd.Context(), cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "GitOps repo directory (required)")
	o.src.flags(f)
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	o.specs.add(f)
	f.StringVar(&o.rendered, "rendered", spec.DefaultLayout.RenderedDir, "folder of the repo holding rendered output (never read as specs)")
	imageFlags(f, &o.images)
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

func runPlan(ctx context.Context, w io.Writer, o planOptions) error {
	if o.output != "table" && o.output != "json" && o.output != "yaml" {
		return &exitError{exitUsage, fmt.Errorf("cairn plan: -o must be table, json or yaml, got %q", o.output)}
	}
	rend, err := newRenderer(o.images)
	if err != nil {
		return &exitError{exitUsage, fmt.Errorf("cairn plan: %w", err)}
	}
	clusters, err := specKinds().LoadRepo(o.repo, o.specs.layout(o.rendered))
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	observed, err := o.src.read(ctx, clusters)
	if err != nil {
		return err
	}
	pols, err := policySet(o.repo)
	if err != nil {
		return err
	}
	plans := newPlanner().WithImages(rend.Images).Plan(clusters, observed, pols)
	var out []byte
	switch o.output {
	case "json":
		out, err = plans.EncodeJSON()
	case "yaml":
		out, err = plans.EncodeYAML()
	default:
		out = []byte(formatTable(plans))
	}
	if err != nil {
		return fmt.Errorf("encode plans: %w", err)
	}
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("write plans: %w", err)
	}
	for _, p := range plans.Plans {
		if p.Status == plan.StatusRefused {
			// The refusal is already in the output; only the exit code says it.
			return &exitError{code: exitRefusals}
		}
	}
	return nil
}

// formatTable is what a person reads first: per cluster a header, then one
// numbered line per step with disruptive and irreversible steps marked.
func formatTable(l plan.List) string {
	var b strings.Builder
	for i, p := range l.Plans {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s  %s  plan %s\n", p.Cluster, statusLine(p), p.ID)
		for _, r := range p.Refusals {
			fmt.Fprintf(&b, "  refused (%s): %s\n", r.Rule, r.Reason)
		}
		for _, g := range p.Waiting {
			fmt.Fprintf(&b, "  waiting: %s\n", g.Description)
		}
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "  note (%s): %s\n", n.Field, n.Reason)
		}
		if len(p.Steps) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tSTEP\tFLAGS\tSUMMARY")
		for j, s := range p.Steps {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", j+1, s.ID, flags(s), s.Summary)
		}
		tw.Flush()
	}
	if len(l.Plans) == 0 {
		b.WriteString("no cluster specs found\n")
	}
	return b.String()
}

func statusLine(p plan.Plan) string {
	switch p.Status {
	case plan.StatusPlanned:
		return fmt.Sprintf("%d step(s)", len(p.Steps))
	case plan.StatusWaiting:
		return "waiting"
	case plan.StatusRefused:
		return "refused"
	}
	return "converged"
}

func flags(s plan.Step) string {
	var f []string
	if s.Disruptive {
		f = append(f, "disruptive")
	}
	if !s.Reversible {
		f = append(f, "irreversible")
	}
	for _, d := range s.Decisions {
		if d.Verdict != plan.Allow {
			f = append(f, strings.ToLower(string(d.Verdict))+":"+d.Policy)
		}
	}
	if ok, _ := s.AutoMerge(); ok {
		f = append(f, "auto-merge")
	}
	if len(f) == 0 {
		return "-"
	}
	return strings.Join(f, ",")
}
