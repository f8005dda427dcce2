package githubpr

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-github/v60/github"

	"github.com/cairn-dev/cairn/publish"
)

// Merge implements publish.Merger: one PUT /pulls/{n}/merge with the head
// cairn pushed as sha, so a commit a person pushed meanwhile is never
// merged unseen. GitHub's refusals are publish.ErrMergeRefused, left to a
// person until the next pass: 405 (a required status or review missing,
// the merge method not allowed), 409 (the head moved) and 422 (not open,
// or not mergeable).
func (p *Provider) Merge(ctx context.Context, pr publish.PullRequest) (string, error) {
	var res *github.PullRequestMergeResult
	err := p.call(ctx, "merge pull request", func() (*github.Response, error) {
		r, resp, err := p.pulls.Merge(ctx, p.Owner, p.Repo, pr.Number, "", &github.PullRequestOptions{
			SHA: pr.Head, MergeMethod: p.MergeMethod})
		res = r
		return resp, err
	})
	var gerr *github.ErrorResponse
	if errors.As(err, &gerr) && gerr.Response != nil {
		switch code := gerr.Response.StatusCode; code {
		case http.StatusMethodNotAllowed, http.StatusConflict, http.StatusUnprocessableEntity:
			return "", fmt.Errorf("%w: GitHub answered %d for #%d: %s", publish.ErrMergeRefused, code, pr.Number, gerr.Message)
		}
	}
	if err != nil {
		return "", err
	}
	if !res.GetMerged() {
		return "", fmt.Errorf("%w: GitHub did not merge #%d: %s", publish.ErrMergeRefused, pr.Number, res.GetMessage())
	}
	p.Log.Info("merged a pull request", "number", pr.Number, "branch", pr.Branch, "sha", res.GetSHA())
	return res.GetSHA(), nil
}
