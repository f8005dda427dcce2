package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/plan"
)

func newPolicy() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Policies: rules that allow, hold or deny steps",
		Example: "  cairn policy test --repo ."}
	var repo string
	var specs specsFlag
	var src liveSource
	test := &cobra.Command{
		Use:   "test --repo DIR [--live FILE | --kubeconfig FILE] [--now TIME] [-o text|json|yaml]",
		Short: "Show what the policies decide on every planned step, without publishing",
		Long: `Plan every cluster of the repo and print each step with every policy's
decision: the maintenance windows of the specs and the policy files under
the repo's policies/ folder (docs/policies.md). --now decides as at another
time.`,
		Example: `  cairn policy test --repo .
  cairn policy test --repo . --live live.yaml --now 2026-11-27T22:00:00Z -o json`,
		Args: cobra.NoArgs,
	}
	output := addOutput(test, formatText, formatJSON, formatYAML)
	test.RunE = func(cmd *cobra.Command, _ []string) error {
		format, err := output.get("cairn policy test")
		if err != nil {
			return err
		}
		clusters, err := specKinds().LoadRepo(repo, specs.layout(""))
		if err != nil {
			return &exitError{exitInvalid, err}
		}
		observed, err := src.read(cmd.Context(), clusters)
		if err != nil {
			return err
		}
		pols, err := policySet(repo)
		if err != nil {
			return err
		}
		plans := newPlanner().Plan(clusters, observed, pols)
		if format != formatText {
			return writeData(cmd.OutOrStdout(), format, policyDecisions(plans))
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CLUSTER\tSTEP\tPOLICY\tVERDICT\tREASON")
		for _, p := range plans.Plans {
			for _, s := range p.Steps {
				if len(s.Decisions) == 0 {
					fmt.Fprintf(tw, "%s\t%s\t-\t-\t\n", p.Cluster, s.ID)
				}
				for _, d := range s.Decisions {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Cluster, s.ID, d.Policy, verdict(d), d.Reason)
				}
			}
		}
		return tw.Flush()
	}
	test.Flags().StringVar(&repo, "repo", "", "GitOps repo directory (required)")
	specs.add(test.Flags())
	src.flags(test.Flags())
	_ = test.MarkFlagRequired("repo")
	cmd.AddCommand(test)
	return cmd
}

// stepDecisions are one step's decisions, as -o json and yaml write them.
type stepDecisions struct {
	Cluster   string          `json:"cluster"`
	Step      string          `json:"step"`
	Decisions []plan.Decision `json:"decisions"`
}

func policyDecisions(plans plan.List) []stepDecisions {
	out := []stepDecisions{}
	for _, p := range plans.Plans {
		for _, s := range p.Steps {
			d := s.Decisions
			if d == nil {
				d = []plan.Decision{}
			}
			out = append(out, stepDecisions{Cluster: p.Cluster.String(), Step: s.ID, Decisions: d})
		}
	}
	return out
}

// verdict is a decision's verdict, marked when the policy lets cairn
// merge the step.
func verdict(d plan.Decision) string {
	if d.AutoMerge {
		return string(d.Verdict) + " (auto-merge)"
	}
	return string(d.Verdict)
}
