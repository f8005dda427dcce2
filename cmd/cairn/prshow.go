package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/publish"
)

func newPRShow() *cobra.Command {
	var o remoteOptions
	cmd := &cobra.Command{
		Use:   "show BRANCH --repo URL|DIR [-o text|json|yaml]",
		Short: "Show one pull request the local provider keeps: title, state, labels, status and body",
		Long: `Show the pull request of BRANCH (cairn/<cluster>/<step>; the cairn/ may be
left out) recorded in the repo under refs/cairn/pr/, as gh pr view shows a
GitHub one: its title, state, base and head, labels, the cairn/plan commit
status, why cairn closed it, and its body.

Exit codes: 0 shown, 1 the repo cannot be read, 2 usage (no pull request
for BRANCH).`,
		Example: `  cairn pr show cairn/my-production-db/pg-add-2 --repo .
  cairn pr show my-etcd-cluster/etcd-add-1 --repo ssh://git@example.com/gitops.git --ssh-key ~/.ssh/id_ed25519
  cairn pr show cairn/my-production-db/pg-add-2 --repo . -o json`,
		Args: cobra.ExactArgs(1),
	}
	o.flags(cmd, false)
	out := addOutput(cmd, formatText, formatJSON, formatYAML)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		format, err := out.get("cairn pr show")
		if err != nil {
			return err
		}
		pr, err := findPR(cmd.Context(), o, args[0])
		if err != nil {
			return err
		}
		if format != formatText {
			return writeData(cmd.OutOrStdout(), format, pr)
		}
		return writePR(cmd.OutOrStdout(), styleOf(cmd.OutOrStdout()), *pr)
	}
	return cmd
}

// findPR is the recorded pull request of branch, with or without the
// cairn/ prefix.
func findPR(ctx context.Context, o remoteOptions, branch string) (*publish.PullRequest, error) {
	repo, cleanup, err := o.clone(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	prs, err := (&publish.Local{Repo: repo, Base: o.base}).List(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range []string{branch, publish.BranchPrefix + branch} {
		for i := range prs {
			if prs[i].Branch == b {
				return &prs[i], nil
			}
		}
	}
	var names []string
	for _, pr := range prs {
		names = append(names, pr.Branch)
	}
	have := "the repo records none"
	if len(names) > 0 {
		have = "cairn pr list shows them: " + strings.Join(names, ", ")
	}
	return nil, &exitError{exitUsage, fmt.Errorf("cairn pr show: no pull request for branch %q (%s)", branch, have)}
}

// writePR writes a pull request as gh pr view does: the title, a line of
// state, the metadata, then the body.
func writePR(w io.Writer, st style, pr publish.PullRequest) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", st.paint(colorBold, pr.Title))
	state := string(pr.State)
	switch pr.State {
	case publish.Open:
		state = st.paint(colorGreen, state)
	case publish.Closed:
		state = st.paint(colorRed, state)
	}
	head := pr.Head
	if len(head) > 12 {
		head = head[:12]
	}
	fmt.Fprintf(&b, "%s • %s into %s • head %s\n", state, pr.Branch, dash(pr.Base), dash(head))
	fmt.Fprintf(&b, "labels: %s\n", dash(strings.Join(pr.Labels, ", ")))
	if pr.Check.State != "" {
		fmt.Fprintf(&b, "status %s: %s — %s\n", publish.CheckContext, pr.Check.State, pr.Check.Description)
	}
	if pr.CloseReason != "" {
		fmt.Fprintf(&b, "closed because: %s\n", pr.CloseReason)
	}
	b.WriteString("\n")
	b.WriteString(strings.TrimRight(pr.Body, "\n"))
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
