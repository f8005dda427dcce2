package githubpr

import (
	"context"

	"github.com/google/go-github/v60/github"

	"github.com/cairn-dev/cairn/publish"
)

// Others returns the open pull requests into the base that are not
// cairn's (a person's spec change, a fork's), newest first: each one's
// number, branch and head. cairn sets its commit status on them
// (SetCheck) so that one required status covers every pull request.
func (p *Provider) Others(ctx context.Context) ([]publish.PullRequest, error) {
	open, err := p.pages(ctx, "open", "created", func(*github.PullRequest) bool { return false })
	if err != nil {
		return nil, err
	}
	var out []publish.PullRequest
	for _, pr := range open {
		if !p.ours(pr) {
			out = append(out, convert(pr))
		}
	}
	return out, nil
}

// SetCheck sets cairn's commit status (publish.CheckContext) on sha.
// GitHub keeps 140 characters of a description.
func (p *Provider) SetCheck(ctx context.Context, sha string, c publish.Check) error {
	desc := c.Description
	if r := []rune(desc); len(r) > 140 {
		desc = string(r[:137]) + "..."
	}
	return p.call(ctx, "set commit status", func() (*github.Response, error) {
		_, resp, err := p.statuses.CreateStatus(ctx, p.Owner, p.Repo, sha, &github.RepoStatus{
			State: github.String(c.State), Description: github.String(desc), Context: github.String(publish.CheckContext)})
		return resp, err
	})
}
