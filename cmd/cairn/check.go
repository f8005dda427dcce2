package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish/githubpr"
)

type checkOptions struct {
	repo  string
	specs specsFlag
	src   liveSource
	gh    githubOptions
	pr    int
	sha   string
}

func newCheck() *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check --repo DIR [--live FILE | --kubeconfig FILE] [--github OWNER/REPO --pr N --sha SHA]",
		Short: "Check a spec change before it merges: decoding, validation, and what cairn would plan",
		Long: `Check the specs of a checkout (a person's pull request that changes
clusters/, in CI): every spec must decode and validate, every policy file
must load, and no plan may refuse the change. It prints what cairn would
plan for each cluster, or what is wrong and where (file:line).

With --github, --pr and --sha it also reports on the pull request: the
commit status cairn/spec on the head (success or failure), and one
comment with the whole report, kept up to date on every run. Nothing is
ever committed or opened.

Exit codes: 0 the change plans, 1 invalid specs or policies, 3 a plan
refuses the change. A failure to report on the pull request (a token
GitHub refuses: 401) is printed beside the check's own errors, never
instead of them; it keeps the check's exit code, or exits 1 when the
change plans.`,
		Example: `  # in CI, on a pull request's checkout
  cairn check --repo .

  # and report on the pull request
  cairn check --repo . --github acme/gitops --pr 42 --sha "$GITHUB_SHA"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCheck(cmd.Context(), cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "the checkout to check (required)")
	o.specs.add(f)
	o.src.flags(f)
	f.StringVar(&o.gh.repo, "github", "", "OWNER/REPO: report on the pull request on GitHub")
	f.StringVar(&o.gh.api, "github-api", "", "GitHub API URL")
	f.StringVar(&o.gh.tokenFile, "github-token-file", "", "file holding the GitHub token (default: $GITHUB_TOKEN)")
	f.IntVar(&o.pr, "pr", 0, "with --github: the pull request's number")
	f.StringVar(&o.sha, "sha", "", "with --github: the pull request's head commit")
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

func runCheck(ctx context.Context, w io.Writer, o checkOptions) error {
	if o.gh.repo != "" && (o.pr <= 0 || !validSHA(o.sha)) {
		return &exitError{exitUsage, fmt.Errorf("cairn check: --github needs --pr N and --sha (the head's 40-character commit)")}
	}
	report, ok, checkErr := checkSpecs(ctx, o)
	if _, err := io.WriteString(w, report); err != nil {
		return err
	}
	if o.gh.repo != "" {
		if err := reportCheck(ctx, o, report, ok); err != nil {
			return withReportError(checkErr, fmt.Errorf("cairn check: report on pull request #%d of %s: %w", o.pr, o.gh.repo, err))
		}
	}
	return checkErr
}

// withReportError is the check's error with the report's failure said
// too: the check's exit code (invalid specs, refusals) is kept, and
// neither message hides the other.
func withReportError(checkErr, reportErr error) error {
	var ee *exitError
	if errors.As(checkErr, &ee) {
		return &exitError{ee.code, errors.Join(ee.err, reportErr)}
	}
	return errors.Join(checkErr, reportErr)
}

// checkSpecs loads, validates and plans the checkout; the report is
// Markdown a person reads in the terminal or in the comment.
func checkSpecs(ctx context.Context, o checkOptions) (report string, ok bool, err error) {
	clusters, err := specKinds().LoadRepo(o.repo, o.specs.layout(""))
	if err == nil {
		// The planner's rules that need no live state, at their field.
		var errs spec.ErrorList
		for _, c := range clusters {
			errs = append(errs, refusalErrors(c, newPlanner().PlanCluster(c, nil, nil).Refusals)...)
		}
		err = errs.Err()
	}
	if err != nil {
		return "**cairn check: the specs are invalid.** Nothing can be planned until this is fixed:\n\n" + codeBlock(err.Error()), false, &exitError{exitInvalid, err}
	}
	pols, err := policySet(o.repo)
	if err != nil {
		return "**cairn check: a policy file is invalid:**\n\n" + codeBlock(err.Error()), false, err
	}
	observed, err := o.src.read(ctx, clusters)
	if err != nil {
		return "**cairn check: the live state cannot be read:**\n\n" + codeBlock(err.Error()), false, err
	}
	plans := newPlanner().Plan(clusters, observed, pols)
	var b strings.Builder
	refused := 0
	for _, p := range plans.Plans {
		if p.Status == plan.StatusRefused {
			refused++
		}
	}
	if refused > 0 {
		fmt.Fprintf(&b, "**cairn check: %d cluster(s) refuse this change.**\n\n", refused)
	} else {
		fmt.Fprintf(&b, "**cairn check: this change plans.** %d cluster(s):\n\n", len(plans.Plans))
	}
	b.WriteString(codeBlock(formatTable(plans)))
	if refused > 0 {
		return b.String(), false, &exitError{code: exitRefusals}
	}
	return b.String(), true, nil
}

// reportCheck sets the status and keeps the comment on the pull request.
func reportCheck(ctx context.Context, o checkOptions, report string, ok bool) error {
	p, err := o.gh.github("", slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	summary := "the change plans"
	if !ok {
		summary = firstLine(report)
	}
	return p.ReportSpecCheck(ctx, githubpr.SpecCheck{Number: o.pr, SHA: o.sha, OK: ok, Summary: summary, Body: report})
}

// firstLine is a report's headline, without Markdown emphasis.
func firstLine(report string) string {
	line, _, _ := strings.Cut(report, "\n")
	return strings.TrimSpace(strings.ReplaceAll(line, "**", ""))
}

func validSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
