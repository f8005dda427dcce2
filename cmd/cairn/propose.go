package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/reconcile"
	"github.com/cairn-dev/cairn/renderer"
)

// cairnEmail signs cairn's commits.
const cairnEmail = "cairn@users.noreply.cairn.dev"

type remoteOptions struct {
	repo, base, tokenFile, sshKey, knownHosts, signKey string
	// insecureHTTP lets tokens go over http:// to another machine.
	insecureHTTP bool
}

// flags adds the flags reaching the GitOps repo; commits says whether the
// command commits (and so takes --sign-key).
func (o *remoteOptions) flags(cmd *cobra.Command, commits bool) {
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "GitOps repo: a local path or a git URL (required)")
	f.StringVar(&o.base, "base", "main", "branch the specs live on and steps merge into")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding an HTTPS token (default: $CAIRN_GIT_TOKEN)")
	f.StringVar(&o.sshKey, "ssh-key", "", "private key for an ssh:// repo")
	f.StringVar(&o.knownHosts, "known-hosts", "", "known_hosts file for ssh (default: the user's)")
	f.BoolVar(&o.insecureHTTP, "insecure-http", false, "send the git token (and the GitHub token, with --github-api) over http:// to a machine other than this one; refused otherwise (only for servers on a network you trust)")
	if commits {
		f.StringVar(&o.signKey, "sign-key", "", "armored OpenPGP private key to sign commits with (passphrase: $CAIRN_SIGN_PASSPHRASE)")
	}
	_ = cmd.MarkFlagRequired("repo")
}

func (o *remoteOptions) remote() (gitrepo.Remote, error) {
	r := gitrepo.Remote{URL: o.repo, Base: o.base, InsecureHTTP: o.insecureHTTP}
	var auth transport.AuthMethod
	switch {
	case o.sshKey != "":
		a, err := gitrepo.SSHAuth(o.sshKey, "", o.knownHosts)
		if err != nil {
			return r, err
		}
		auth = a
	default:
		token, err := gitrepo.ReadToken(o.tokenFile, "CAIRN_GIT_TOKEN")
		if err != nil {
			return r, err
		}
		if token != "" {
			auth = gitrepo.TokenAuth(token)
		}
	}
	r.Auth = auth
	return r, nil
}

// clone clones the repo into a temporary directory removed by cleanup.
func (o *remoteOptions) clone(ctx context.Context) (repo *gitrepo.Repo, cleanup func(), err error) {
	r, err := o.remote()
	if err != nil {
		return nil, nil, &exitError{exitUsage, err}
	}
	dir, err := makeCloneDir()
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	repo, err = gitrepo.Clone(ctx, r, dir+"/work")
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	if o.signKey != "" {
		if repo.SignKey, err = gitrepo.ReadSignKey(o.signKey, os.Getenv("CAIRN_SIGN_PASSPHRASE")); err != nil {
			cleanup()
			return nil, nil, &exitError{exitUsage, err}
		}
	}
	return repo, cleanup, nil
}

// githubOptions select the GitHub provider instead of the local one.
type githubOptions struct {
	repo, api, tokenFile, mergeMethod string
	verbose, noAutoMerge              bool
	// insecureHTTP is the command's --insecure-http (remoteOptions).
	insecureHTTP bool
}

// flags adds the GitHub flags, and --no-auto-merge.
func (gh *githubOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&gh.repo, "github", "", "OWNER/REPO: open pull requests on GitHub instead of recording them in the repo")
	f.StringVar(&gh.api, "github-api", "", "GitHub API URL (GitHub Enterprise: https://HOST/api/v3/)")
	f.StringVar(&gh.tokenFile, "github-token-file", "", "file holding the GitHub token (default: $GITHUB_TOKEN)")
	f.StringVar(&gh.mergeMethod, "github-merge-method", "merge", "how cairn merges the steps a policy lets it merge: merge, squash or rebase")
	f.BoolVar(&gh.noAutoMerge, "no-auto-merge", false, "never merge a pull request, whatever the policies allow")
}

func newPropose() *cobra.Command {
	var o remoteOptions
	var gh githubOptions
	var src liveSource
	var specs specsFlag
	var images renderer.Options
	var rc renderCacheOptions
	cmd := &cobra.Command{
		Use:   "propose --repo URL|DIR [--live FILE]",
		Short: "Plan, render and publish each cluster's next step as a branch and a pull request",
		Long: `One pass of cairn's main job: clone the GitOps repo, plan every cluster
against the live state, and publish each plan's first step as a commit on
branch cairn/<cluster>/<step-id> with a pull request (kept in the repo
under refs/cairn/pr/ by the local provider; see cairn pr list). A pull
request a new plan supersedes is closed with the reason. Running it again
with nothing changed writes nothing. At the end of the pass, cairn merges
the pull requests of the steps a policy lets it merge (autoMerge in
docs/policies.md) once no policy holds them, their gates before them pass
in the live state and no do-not-merge label is on them; --no-auto-merge
turns that off.

Renders are kept in a cache folder across runs (--render-cache), so a run
renders only the steps whose spec or plan changed since the last: what it
reads back is checked, and the commit on each branch is still compared
with the branch's objects (docs/scale.md).`,
		Example: `  # one pass against a recorded live state, pull requests kept in the repo
  cairn propose --repo . --live live.yaml

  # against the cluster, pull requests on GitHub
  cairn propose --repo https://github.com/acme/gitops.git --token-file token --kubeconfig ~/.kube/prod --github acme/gitops`,
		Args: cobra.NoArgs,
	}
	out := addOutput(cmd, formatText, formatJSON, formatYAML)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		format, err := out.get("cairn propose")
		if err != nil {
			return err
		}
		return runPropose(cmd.Context(), outcomeWriter{cmd.OutOrStdout(), format}, cmd.ErrOrStderr(), o, gh, src, specs, images, rc)
	}
	o.flags(cmd, true)
	rc.flags(cmd.Flags(), true)
	src.flags(cmd.Flags())
	specs.add(cmd.Flags())
	imageFlags(cmd.Flags(), &images)
	monitoringFlags(cmd.Flags(), &images)
	gh.flags(cmd)
	cmd.Flags().BoolVarP(&gh.verbose, "verbose", "v", false, "print the GitHub API calls made and what was rendered")
	return cmd
}

// provider returns the pull request provider: GitHub when --github is
// set, else the local one. counts reports GitHub API calls.
func (gh githubOptions) provider(repo *gitrepo.Repo, base string, log *slog.Logger) (publish.Provider, func() string, error) {
	if gh.repo == "" {
		return &publish.Local{Repo: repo, Base: base, Name: "cairn", Email: cairnEmail}, func() string { return "" }, nil
	}
	p, err := gh.github(base, log)
	if err != nil {
		return nil, nil, err
	}
	return p, func() string {
		c := p.Counts()
		return fmt.Sprintf("GitHub API calls: %d reads (%d answered 304 Not Modified), %d writes\n", c.Reads, c.NotModified, c.Writes)
	}, nil
}

// github is the GitHub client of --github, --github-api and the token.
func (gh githubOptions) github(base string, log *slog.Logger) (*githubpr.Provider, error) {
	owner, name, ok := strings.Cut(gh.repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return nil, &exitError{exitUsage, fmt.Errorf("--github must be OWNER/REPO, got %q", gh.repo)}
	}
	token, err := gitrepo.ReadToken(gh.tokenFile, "GITHUB_TOKEN")
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	if token == "" {
		return nil, &exitError{exitUsage, fmt.Errorf("--github needs a token: --github-token-file or $GITHUB_TOKEN")}
	}
	if err := gitrepo.CheckTransport(gh.api, true); err != nil && !gh.insecureHTTP {
		return nil, &exitError{exitUsage, fmt.Errorf("--github-api: %w", err)}
	}
	p, err := githubpr.New(owner, name, base, githubpr.Options{BaseURL: gh.api, Token: token, MergeMethod: gh.mergeMethod, Log: log})
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	return p, nil
}

func runPropose(ctx context.Context, w outcomeWriter, errw io.Writer, o remoteOptions, gh githubOptions, src liveSource, specs specsFlag, images renderer.Options, rc renderCacheOptions) error {
	r, err := newRenderer(images)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	for _, warning := range checkoutWarnings(o.repo, o.base, specs.dir, "policies") {
		fmt.Fprintln(errw, "cairn propose: warning:", warning)
	}
	repo, cleanup, err := o.clone(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	log := slog.New(slog.NewTextHandler(errw, nil))
	gh.insecureHTTP = o.insecureHTTP
	prs, counts, err := gh.provider(repo, o.base, log)
	if err != nil {
		return err
	}
	if gh.verbose {
		defer func() { fmt.Fprint(errw, counts()) }()
	}
	disk := rc.open(r, errw)
	defer trimRenderCache(disk, errw)
	cache := renderer.NewCache(r, 0)
	if disk != nil {
		cache.WithDisk(disk)
	}
	cfg := loopConfigWith(repo, prs, r, cache, src, specs, log)
	cfg.AutoMerge = !gh.noAutoMerge
	if gh.verbose {
		defer func() { fmt.Fprint(errw, renderCounts(cache)) }()
	}
	res, err := reconcile.New(cfg).Pass(ctx)
	// Every cluster's outcome is printed, the failed ones with their error,
	// even when some failed.
	if werr := w.write(res.Outcomes); werr != nil {
		return errors.Join(cliError(err), werr)
	}
	if err != nil {
		return cliError(err)
	}
	for _, p := range res.Plans.Plans {
		if p.Status == plan.StatusRefused {
			return &exitError{code: exitRefusals}
		}
	}
	// A person's commit on a step's branch stops that step until a person
	// looks: cairn neither pushes over it nor merges it.
	for _, o := range res.Outcomes {
		if o.Action == publish.ActionForeign {
			return &exitError{code: exitRefusals}
		}
	}
	return nil
}

// outcomeWriter writes a pass's outcomes as a table (text) or as data.
type outcomeWriter struct {
	w      io.Writer
	format string
}

// outcomeDoc is one cluster's outcome in -o json and yaml.
type outcomeDoc struct {
	Cluster     string         `json:"cluster"`
	Status      plan.Status    `json:"status"`
	Step        string         `json:"step,omitempty"`
	Branch      string         `json:"branch,omitempty"`
	PullRequest publish.Action `json:"pullRequest"`
	Closed      []string       `json:"closed,omitempty"`
	Note        string         `json:"note,omitempty"`
}

func (ow outcomeWriter) write(outcomes []publish.Outcome) error {
	if ow.format == formatText || ow.format == "" {
		printOutcomes(ow.w, outcomes)
		return nil
	}
	docs := make([]outcomeDoc, 0, len(outcomes))
	for _, o := range outcomes {
		docs = append(docs, outcomeDoc{Cluster: o.Cluster, Status: o.Status, Step: o.Step, Branch: o.Branch, PullRequest: o.Action, Closed: o.Closed, Note: o.Note})
	}
	return writeData(ow.w, ow.format, map[string]any{"outcomes": docs})
}

func printOutcomes(w io.Writer, outcomes []publish.Outcome) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSTATUS\tSTEP\tPULL REQUEST\tNOTE")
	for _, o := range outcomes {
		step, note := o.Step, o.Note
		if step == "" {
			step = "-"
		}
		if len(o.Closed) > 0 {
			note = fmt.Sprintf("closed %v %s", o.Closed, note)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.Cluster, o.Status, step, o.Action, note)
	}
	tw.Flush()
}

func newPR() *cobra.Command {
	cmd := &cobra.Command{Use: "pr", Short: "Pull requests kept by the local provider"}
	var o remoteOptions
	list := &cobra.Command{
		Use:   "list --repo URL|DIR [-o text|json|yaml]",
		Short: "List cairn's pull requests recorded in the repo (open, merged, closed)",
		Example: `  cairn pr list --repo .
  cairn pr list --repo ssh://git@example.com/gitops.git --ssh-key ~/.ssh/id_ed25519 -o json`,
		Args: cobra.NoArgs,
	}
	out := addOutput(list, formatText, formatJSON, formatYAML)
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		format, err := out.get("cairn pr list")
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		repo, cleanup, err := o.clone(ctx)
		if err != nil {
			return err
		}
		defer cleanup()
		prs, err := (&publish.Local{Repo: repo, Base: o.base}).List(ctx)
		if err != nil {
			return err
		}
		if format != formatText {
			if prs == nil {
				prs = []publish.PullRequest{}
			}
			return writeData(cmd.OutOrStdout(), format, prs)
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BRANCH\tSTATE\tTITLE\tCLOSED BECAUSE")
		for _, pr := range prs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", pr.Branch, pr.State, pr.Title, pr.CloseReason)
		}
		return tw.Flush()
	}
	o.flags(list, false)
	cmd.AddCommand(list, newPRShow())
	return cmd
}
