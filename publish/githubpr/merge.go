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
// person: 405 (a required status or review missing, the merge method not
// allowed), 409 (the head moved) and 422 (not open, or not mergeable). A
// refusal is noted once in the pull request's body (one write), and a
// pull request noted so at its head is not tried again (no call) until it
// changes: a new head or body, or a person deleting the note.
func (p *Provider) Merge(ctx context.Context, pr publish.PullRequest) (string, error) {
	if publish.MergeRefused(pr.Body, pr.Head) {
		return "", fmt.Errorf("%w: GitHub refused #%d at this head before (see its body); cairn tries again once it changes", publish.ErrMergeRefused, pr.Number)
	}
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
			why := fmt.Sprintf("GitHub answered %d for #%d: %s", code, pr.Number, gerr.Message)
			p.noteRefusal(ctx, pr, why)
			return "", fmt.Errorf("%w: %s", publish.ErrMergeRefused, why)
		}
	}
	if err != nil {
		return "", err
	}
	if !res.GetMerged() {
		why := fmt.Sprintf("GitHub did not merge #%d: %s", pr.Number, res.GetMessage())
		p.noteRefusal(ctx, pr, why)
		return "", fmt.Errorf("%w: %s", publish.ErrMergeRefused, why)
	}
	p.Log.Info("merged a pull request", "number", pr.Number, "branch", pr.Branch, "sha", res.GetSHA())
	return res.GetSHA(), nil
}

// noteRefusal writes the refusal into the pull request's body, where the
// next pass's list sees it. A failure to note it is logged: the next pass
// then tries the merge again, which is all it costs.
func (p *Provider) noteRefusal(ctx context.Context, pr publish.PullRequest, why string) {
	body := publish.WithMergeRefusal(pr.Body, pr.Head, why)
	err := p.call(ctx, "note a merge refusal", func() (*github.Response, error) {
		_, resp, err := p.pulls.Edit(ctx, p.Owner, p.Repo, pr.Number, &github.PullRequest{Body: github.String(body)})
		return resp, err
	})
	if err != nil {
		p.Log.Warn("could not note a merge refusal on the pull request; the next pass tries to merge it again",
			"number", pr.Number, "err", err.Error())
		return
	}
	if old, ok := p.mem.last(pr.Number); ok {
		old.Body = body
		p.mem.remember(old)
	}
}
