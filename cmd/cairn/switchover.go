package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
)

// switchoverOptions are cairn switchover's flags.
type switchoverOptions struct {
	remote remoteOptions
	gh     githubOptions
	specs  specsFlag
	to, id string
	// write edits the spec in the checkout --repo names, and no more.
	write bool
}

func newSwitchover() *cobra.Command {
	var o switchoverOptions
	cmd := &cobra.Command{
		Use:   "switchover CLUSTER --to MEMBER --repo URL|DIR [--id ID] [--github OWNER/REPO | --write]",
		Short: "Ask for a switchover of a PostgreSQL cluster's primary as a spec pull request; never touches the cluster",
		Long: `Write spec.switchover {to: MEMBER, id: ID} into CLUSTER's spec and open a
pull request of that spec change, for a person to review: on branch
cairn-spec/CLUSTER/switchover-ID, with the local provider (records under
refs/cairn/pr/, see cairn pr list) or on GitHub with --github. Only the
spec file's lines of spec.switchover change; its other lines, comments
and formatting are kept. With --write, the spec file in the checkout
--repo names is edited in place, and nothing is committed or pushed.

The command never talks to the cluster. Once the spec change is merged,
cairn plans one PostgresSwitchover step, a pull request of its own with
its gates (MEMBER streams and has caught up, every member ready): merged,
the runtime makes the primary read-only, waits until MEMBER has replayed
all of its WAL, and promotes MEMBER; no committed transaction is lost.
The request is served once: a later failover does not bring it back. A
request for the member that is primary already plans nothing.

ID names the request (lowercase letters, digits and -, up to 40); by
default the time now, in UTC (20261207-221500). Only PostgresCluster
takes a switchover: etcd moves its leadership on its own, and cairn moves
it off a member it removes.`,
		Example: `  # a spec pull request on GitHub: move the primary of my-production-db to member 2
  cairn switchover my-production-db --to my-production-db-2 --id before-node-maintenance \
    --repo https://github.com/acme/gitops.git --token-file token --github acme/gitops

  # edit the spec in a checkout, to commit and push as usual
  cairn switchover my-production-db --to my-production-db-2 --repo . --write`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.gh.insecureHTTP = o.remote.insecureHTTP
			return runSwitchover(cmd.Context(), cmd.OutOrStdout(), args[0], o)
		},
	}
	o.remote.flags(cmd, true)
	o.specs.add(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.gh.repo, "github", "", "OWNER/REPO: open the pull request on GitHub instead of recording it in the repo")
	f.StringVar(&o.gh.api, "github-api", "", "GitHub API URL (GitHub Enterprise: https://HOST/api/v3/)")
	f.StringVar(&o.gh.tokenFile, "github-token-file", "", "file holding the GitHub token (default: $GITHUB_TOKEN)")
	f.StringVar(&o.to, "to", "", "the member to make the primary, CLUSTER-N (required)")
	f.StringVar(&o.id, "id", "", "the request's id (default: the time now in UTC, 20060102-150405)")
	f.BoolVar(&o.write, "write", false, "edit the spec file in the checkout --repo names; commit and push nothing")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func runSwitchover(ctx context.Context, w io.Writer, cluster string, o switchoverOptions) error {
	req, err := switchoverRequest(cluster, o)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	if o.write {
		if o.gh.repo != "" {
			return &exitError{exitUsage, fmt.Errorf("cairn switchover: --write edits a checkout and opens no pull request; leave out --github")}
		}
		return writeSwitchover(w, cluster, req, o)
	}
	return proposeSwitchover(ctx, w, cluster, req, o)
}

// switchoverRequest checks the flags: a member of cluster, a valid id.
func switchoverRequest(cluster string, o switchoverOptions) (spec.Switchover, error) {
	if err := spec.CheckName(cluster); err != nil {
		return spec.Switchover{}, err
	}
	if _, ok := contract.MemberOrdinal(cluster, o.to); !ok {
		return spec.Switchover{}, fmt.Errorf("--to %q is not a member of %s: members are named %s, %s, ...", o.to, cluster,
			contract.MemberName(cluster, 0), contract.MemberName(cluster, 1))
	}
	id := o.id
	if id == "" {
		id = clock().UTC().Format("20060102-150405")
	}
	if err := spec.CheckSwitchoverID(id); err != nil {
		return spec.Switchover{}, fmt.Errorf("--id %w", err)
	}
	return spec.Switchover{To: o.to, ID: id}, nil
}

// specFileOf is the file, relative to the repo dir and slash-separated,
// that holds cluster's spec.
func specFileOf(dir, cluster string, specs specsFlag) (string, error) {
	clusters, err := specKinds().LoadRepo(dir, specs.layout(""))
	if err != nil {
		return "", &exitError{exitInvalid, err}
	}
	for _, c := range clusters {
		if c.Ref().Name != cluster {
			continue
		}
		rel, err := filepath.Rel(dir, c.Source().File)
		if err != nil || !filepath.IsLocal(rel) {
			return "", &exitError{exitInvalid, fmt.Errorf("the spec of %s is in %s, which cairn cannot edit", cluster, c.Source().File)}
		}
		return filepath.ToSlash(rel), nil
	}
	return "", &exitError{exitInvalid, fmt.Errorf("no spec of cluster %s under %s/ of the repo", cluster, specs.dir)}
}

// editSpec is the spec file data with the request written in.
func editSpec(rel string, data []byte, cluster string, req spec.Switchover) ([]byte, error) {
	out, err := spec.WithSwitchover(rel, data, cluster, req)
	if err != nil {
		return nil, &exitError{exitInvalid, err}
	}
	if bytes.Equal(out, data) {
		return nil, &exitError{exitInvalid, fmt.Errorf("%s asks for this switchover already (spec.switchover: to %s, id %s): nothing to change", rel, req.To, req.ID)}
	}
	return out, nil
}

// writeSwitchover edits the spec file of a checkout in place.
func writeSwitchover(w io.Writer, cluster string, req spec.Switchover, o switchoverOptions) error {
	dir := o.remote.repo
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return &exitError{exitUsage, fmt.Errorf("cairn switchover --write: --repo must be a checkout's folder, got %q", dir)}
	}
	rel, err := specFileOf(dir, cluster, o.specs)
	if err != nil {
		return err
	}
	file := filepath.Join(dir, filepath.FromSlash(rel))
	fi, err := os.Stat(file)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, err := editSpec(rel, data, cluster, req)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, out, fi.Mode().Perm()); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "wrote spec.switchover (to %s, id %s) into %s; commit it and open a pull request: once it is merged, cairn plans the switchover as a step of its own\n",
		req.To, req.ID, rel)
	return err
}

// proposeSwitchover commits the spec change on a branch of its own and
// opens its pull request.
func proposeSwitchover(ctx context.Context, w io.Writer, cluster string, req spec.Switchover, o switchoverOptions) error {
	repo, cleanup, err := o.remote.clone(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	rel, err := specFileOf(repo.Dir(), cluster, o.specs)
	if err != nil {
		return err
	}
	root := path.Dir(rel)
	if root == "." {
		return &exitError{exitInvalid, fmt.Errorf("the spec of %s is at the repo's top (%s); cairn switchover edits specs in a folder: use --write", cluster, rel)}
	}
	title := fmt.Sprintf("Switch over %s to %s (spec.switchover %s)", cluster, req.To, req.ID)
	branch := publish.SpecBranch(cluster, "switchover-"+req.ID)
	// The change is built on the base as Publish finds it, again should
	// the base move meanwhile.
	res, err := repo.Publish(ctx, branch, func(base *object.Commit) (gitrepo.Change, error) {
		files, err := repo.Folder(base, root)
		if err != nil {
			return gitrepo.Change{}, err
		}
		data, ok := files[rel]
		if !ok {
			return gitrepo.Change{}, fmt.Errorf("%s is gone from the base branch", rel)
		}
		if files[rel], err = editSpec(rel, data, cluster, req); err != nil {
			return gitrepo.Change{}, err
		}
		return gitrepo.Change{Root: root, Files: files, Message: title + "\n\n" + switchoverBody(rel, req), Name: "cairn", Email: cairnEmail}, nil
	})
	if err != nil {
		return err
	}
	var prs publish.Provider = &publish.Local{Repo: repo, Base: o.remote.base}
	where := "recorded in the repo (cairn pr list)"
	if o.gh.repo != "" {
		p, err := o.gh.github(o.remote.base, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		prs, where = p, "on GitHub "+o.gh.repo
	}
	pr, err := prs.Open(ctx, publish.PullRequest{Branch: branch, Base: o.remote.base, Title: title, Body: switchoverBody(rel, req), Head: res.Commit.String()})
	if err != nil {
		return fmt.Errorf("cairn switchover: open the pull request of %s: %w", branch, err)
	}
	number := ""
	if pr.Number > 0 {
		number = fmt.Sprintf(" #%d", pr.Number)
	}
	_, err = fmt.Fprintf(w, "opened pull request%s %s, %s: %s\n", number, branch, where, title)
	return err
}

// switchoverBody says what merging the spec change does, and what it
// does not.
func switchoverBody(rel string, req spec.Switchover) string {
	return fmt.Sprintf(`This pull request changes only the spec: it sets spec.switchover in %s (to %s, id %s). Merging it changes nothing in the cluster by itself.

Once it is merged, cairn plans one PostgresSwitchover step, a pull request of its own for review, gated on %s streaming from the primary and caught up and on every member ready. When that step is merged, the runtime makes the primary read-only, waits until %s has replayed all of its WAL, then promotes %s: writes pause for a few seconds and no committed transaction is lost. Should %s not catch up, the primary gets its writes back and the runtime tries again later.

The request is served once: after a later failover cairn does not move the primary back for it. If %s is the primary already when cairn plans, nothing is planned and the plan says so.
`, rel, req.To, req.ID, req.To, req.To, req.To, req.To, req.To)
}
