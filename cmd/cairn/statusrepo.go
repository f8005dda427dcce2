package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	git "github.com/go-git/go-git/v5"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
)

// statusRepo is a GitOps repo as cairn status reads it: the folder its
// specs are read from, its files by repo path (rendered entry points),
// and its pull requests.
type statusRepo struct {
	dir     string
	read    func(path string) ([]byte, error)
	prs     []publish.PullRequest
	prsFrom string
	// github makes pull request URLs; nil for the local provider.
	github  *githubOptions
	cleanup func()
}

// pr is the pull request of branch, or nil.
func (r *statusRepo) pr(branch string) *prStatus {
	for _, p := range r.prs {
		if p.Branch == branch {
			s := &prStatus{Branch: p.Branch, State: p.State, Number: p.Number, Title: p.Title}
			if r.github != nil && p.Number > 0 {
				s.URL = r.github.pullURL(p.Number)
			}
			return s
		}
	}
	return nil
}

// openStatusRepo opens --repo: a folder that is not a git repository is
// read as it is, without pull requests; a checkout is read as it is (as
// cairn plan reads it), its pull requests from a clone; a bare repo or a
// URL is cloned and read at its base branch.
func openStatusRepo(ctx context.Context, o remoteOptions, gh githubOptions, log *slog.Logger) (*statusRepo, error) {
	dirReader := func(dir string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, filepath.FromSlash(p))) }
	}
	if info, err := os.Stat(o.repo); err == nil && info.IsDir() {
		g, err := git.PlainOpen(o.repo)
		if errors.Is(err, git.ErrRepositoryNotExists) {
			r := &statusRepo{dir: o.repo, read: dirReader(o.repo), prsFrom: "none: " + o.repo + " is not a git repository", cleanup: func() {}}
			return r, r.readPRs(ctx, nil, o.base, gh, log)
		}
		if err != nil {
			return nil, &exitError{exitInvalid, fmt.Errorf("cairn status: open %s: %w", o.repo, err)}
		}
		if _, err := g.Worktree(); err == nil {
			// A person's checkout: the pull requests are recorded in the
			// repo it was cloned from.
			from := o
			if origin, err := g.Remote("origin"); err == nil && len(origin.Config().URLs) > 0 {
				from.repo = origin.Config().URLs[0]
			}
			repo, cleanup, err := from.clone(ctx)
			if err != nil {
				return nil, err
			}
			r := &statusRepo{dir: o.repo, read: dirReader(o.repo), cleanup: cleanup}
			return r, r.readPRs(ctx, repo, o.base, gh, log)
		}
	}
	repo, cleanup, err := o.clone(ctx)
	if err != nil {
		return nil, err
	}
	r := &statusRepo{dir: repo.Dir(), read: repo.ReadBase, cleanup: cleanup}
	return r, r.readPRs(ctx, repo, o.base, gh, log)
}

// readPRs reads the pull requests: from GitHub with --github, else the
// local provider's records in repo (none without a repo).
func (r *statusRepo) readPRs(ctx context.Context, repo *gitrepo.Repo, base string, gh githubOptions, log *slog.Logger) error {
	var prs publish.Provider
	switch {
	case gh.repo != "":
		p, err := gh.github(base, log)
		if err != nil {
			r.cleanup()
			return err
		}
		prs, r.github, r.prsFrom = p, &gh, "GitHub "+gh.repo
	case repo == nil:
		return nil
	default:
		prs, r.prsFrom = &publish.Local{Repo: repo, Base: base}, "the local provider's records (refs/cairn/pr/)"
	}
	list, err := prs.List(ctx)
	if err != nil {
		r.cleanup()
		return fmt.Errorf("cairn status: read pull requests: %w", err)
	}
	r.prs = list
	return nil
}

// pullURL is the web address of pull request n of --github.
func (gh githubOptions) pullURL(n int) string {
	host := "https://github.com"
	if gh.api != "" {
		host = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(gh.api, "/"), "/api/v3"), "/")
	}
	return fmt.Sprintf("%s/%s/pull/%d", host, gh.repo, n)
}
