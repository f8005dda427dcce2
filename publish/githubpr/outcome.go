package githubpr

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/cairn-dev/cairn/publish"
)

// The calls that note a merged step's outcome (publish.Commenter,
// publish.MergeTimer) and the repo's web address (publish.WebLinker).

// getter is go-github's single pull request read; the client's
// PullRequests service has it.
type getter interface {
	Get(ctx context.Context, owner, repo string, number int) (*github.PullRequest, *github.Response, error)
}

// WebURL implements publish.WebLinker: https://github.com/OWNER/REPO
// for api.github.com, https://HOST/OWNER/REPO for GitHub Enterprise
// Server (whose API is at https://HOST/api/v3/).
func (p *Provider) WebURL() string {
	host := "github.com"
	if p.transport != nil && p.transport.host != "" && p.transport.host != "api.github.com" {
		host = p.transport.host
	}
	return fmt.Sprintf("https://%s/%s/%s", host, p.Owner, p.Repo)
}

// Comments implements publish.Commenter: every page of the pull
// request's comments, oldest first.
func (p *Provider) Comments(ctx context.Context, pr publish.PullRequest) ([]string, error) {
	all, err := p.listComments(ctx, pr.Number)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(all))
	for _, c := range all {
		out = append(out, c.GetBody())
	}
	return out, nil
}

// listComments reads every page of pull request n's comments, oldest
// first.
func (p *Provider) listComments(ctx context.Context, n int) ([]*github.IssueComment, error) {
	var out []*github.IssueComment
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		var page []*github.IssueComment
		var resp *github.Response
		err := p.call(ctx, "list comments", func() (*github.Response, error) {
			var err error
			page, resp, err = p.issues.ListComments(ctx, p.Owner, p.Repo, n, opts)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// Comment implements publish.Commenter.
func (p *Provider) Comment(ctx context.Context, pr publish.PullRequest, body string) error {
	return p.call(ctx, "comment", func() (*github.Response, error) {
		_, resp, err := p.issues.CreateComment(ctx, p.Owner, p.Repo, pr.Number, &github.IssueComment{Body: github.String(body)})
		return resp, err
	})
}

// SetBody implements publish.Commenter: GitHub edits the body of a merged
// pull request as of an open one.
func (p *Provider) SetBody(ctx context.Context, pr publish.PullRequest, body string) error {
	err := p.call(ctx, "edit pull request", func() (*github.Response, error) {
		_, resp, err := p.pulls.Edit(ctx, p.Owner, p.Repo, pr.Number, &github.PullRequest{Body: github.String(body)})
		return resp, err
	})
	if err != nil {
		return err
	}
	if old, ok := p.mem.last(pr.Number); ok {
		old.Body = body
		p.mem.remember(old)
	}
	return nil
}

// MergedAt implements publish.MergeTimer: GitHub's merged_at of the pull
// request; zero when it was not merged, or the client cannot read one
// pull request.
func (p *Provider) MergedAt(ctx context.Context, pr publish.PullRequest) (time.Time, error) {
	g, ok := p.pulls.(getter)
	if !ok {
		return time.Time{}, nil
	}
	var got *github.PullRequest
	err := p.call(ctx, "get pull request", func() (*github.Response, error) {
		var resp *github.Response
		var err error
		got, resp, err = g.Get(ctx, p.Owner, p.Repo, pr.Number)
		return resp, err
	})
	if err != nil {
		return time.Time{}, err
	}
	return got.GetMergedAt().Time, nil
}
