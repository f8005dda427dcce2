package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

func newValidate() *cobra.Command {
	return &cobra.Command{
		Use:   "validate PATH...",
		Short: "Check cluster spec files (directories are searched recursively, skipping rendered/)",
		Long: `Check cluster spec files: strict decoding, defaults, validation, and the
planner's rules that need no live state (an etcd size outside 1..7, say).
Every problem is printed as file:line:col: field.path: message; the exit
code is 1 when there is any.`,
		Example: `  cairn validate clusters/
  cairn validate clusters/my-production-db.yaml clusters/my-etcd-cluster.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			clusters, err := specKinds().LoadPaths(args)
			if err != nil {
				return &exitError{exitInvalid, err}
			}
			var errs spec.ErrorList
			for _, c := range clusters {
				p := newPlanner().PlanCluster(c, nil, nil)
				errs = append(errs, refusalErrors(c, p.Refusals)...)
			}
			if err := errs.Err(); err != nil {
				return &exitError{exitInvalid, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d cluster spec(s) valid\n", len(clusters))
			return nil
		},
	}
}

// refusalErrors places refusals at the spec field they are about.
func refusalErrors(c spec.Cluster, refusals []plan.Refusal) spec.ErrorList {
	var out spec.ErrorList
	for _, r := range refusals {
		line, col := c.Source().Position(r.Field)
		out = append(out, &spec.Error{File: c.Source().File, Line: line, Col: col, Path: r.Field,
			Msg: fmt.Sprintf("%s (rule %s)", r.Reason, r.Rule)})
	}
	return out
}
