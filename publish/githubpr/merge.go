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
// refusal is noted in the pull request's body (one write; none when the
// same note is there), with what GitHub then said of its mergeability
// (mergeable_state, one read). A pull request noted so at its head is
// tried again (mergeAgain) once GitHub says it can merge where it did
// not (a required check turned green, a reviewer approved), or it
// changes: a new head or body, or a person deleting the note.
func (p *Provider) Merge(ctx context.Context, pr publish.PullRequest) (string, error) {
	if was, noted := publish.MergeRefusal(pr.Body, pr.Head); noted {
		now, err := p.mergeableState(ctx, pr.Number)
		if err != nil {
			return "", err
		}
		if !mergeAgain(was, now) {
			return "", fmt.Errorf("%w: GitHub refused #%d at this head before (see its body) and says it is %s; cairn tries again once GitHub says it can merge", publish.ErrMergeRefused, pr.Number, orUnknown(now))
		}
		p.Log.Info("trying a refused merge again: GitHub says it can merge now", "number", pr.Number, "was", orUnknown(was), "now", now)
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
			p.noteRefusal(ctx, pr, p.stateAfterRefusal(ctx, pr.Number), why)
			return "", fmt.Errorf("%w: %s", publish.ErrMergeRefused, why)
		}
	}
	if err != nil {
		return "", err
	}
	if !res.GetMerged() {
		why := fmt.Sprintf("GitHub did not merge #%d: %s", pr.Number, res.GetMessage())
		p.noteRefusal(ctx, pr, p.stateAfterRefusal(ctx, pr.Number), why)
		return "", fmt.Errorf("%w: %s", publish.ErrMergeRefused, why)
	}
	p.Log.Info("merged a pull request", "number", pr.Number, "branch", pr.Branch, "sha", res.GetSHA())
	return res.GetSHA(), nil
}

// noteRefusal writes the refusal into the pull request's body, where the
// next pass's list sees it, unless the same note is there. A failure to
// note it is logged: the next pass then tries the merge again, which is
// all it costs.
func (p *Provider) noteRefusal(ctx context.Context, pr publish.PullRequest, state, why string) {
	body := publish.WithMergeRefusalIn(pr.Body, pr.Head, state, why)
	if body == pr.Body {
		return
	}
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

// The mergeable_state values in which GitHub merges a pull request:
// clean, unstable (a check that is not required fails) and has_hooks.
// In the others (blocked: a required check or review missing; behind,
// dirty, draft, unknown) it refuses.
var canMerge = map[string]bool{"clean": true, "unstable": true, "has_hooks": true}

// mergeAgain reports whether a merge GitHub refused while it said the
// pull request was in state was (GitHub's mergeable_state; "" when not
// noted) is worth trying again now that it says now: GitHub says it can
// merge, and said something else then. A refusal while it said it can
// merge (a merge method not allowed) is not tried again until the pull
// request changes.
func mergeAgain(was, now string) bool { return canMerge[now] && now != was }

// mergeableState is GitHub's mergeable_state of pull request number: one
// conditional read.
func (p *Provider) mergeableState(ctx context.Context, number int) (string, error) {
	g, ok := p.pulls.(getter)
	if !ok {
		return "", nil
	}
	var got *github.PullRequest
	err := p.call(ctx, "get pull request", func() (*github.Response, error) {
		var resp *github.Response
		var err error
		got, resp, err = g.Get(ctx, p.Owner, p.Repo, number)
		return resp, err
	})
	if err != nil {
		return "", err
	}
	return got.GetMergeableState(), nil
}

// stateAfterRefusal is the mergeable_state to note with a refusal; ""
// when it cannot be read (the note then holds none, and the merge is
// tried again once GitHub says it can merge).
func (p *Provider) stateAfterRefusal(ctx context.Context, number int) string {
	state, err := p.mergeableState(ctx, number)
	if err != nil {
		p.Log.Warn("could not read whether GitHub can merge the refused pull request", "number", number, "err", err.Error())
		return ""
	}
	return state
}

func orUnknown(state string) string {
	if state == "" {
		return "unknown"
	}
	return state
}
