package githubpr

import (
	"context"
	"strings"

	"github.com/google/go-github/v60/github"
)

// SpecCheckContext is the commit status cairn check sets on a person's
// pull request that changes specs.
const SpecCheckContext = "cairn/spec"

// specCheckMarker marks the one comment cairn check keeps on a pull
// request, edited in place on every run.
const specCheckMarker = "<!-- cairn check -->"

// SpecCheck is the outcome of cairn check on a pull request's head.
type SpecCheck struct {
	Number int
	SHA    string
	OK     bool
	// Summary is the status's one-line description (GitHub keeps 140
	// characters of it); Body the comment's Markdown.
	Summary, Body string
}

// ReportSpecCheck sets the cairn/spec commit status on the head and keeps
// one comment on the pull request with the whole report: a new comment the
// first time, the same one edited afterwards. A passing check on a pull
// request that never had a comment adds none.
func (p *Provider) ReportSpecCheck(ctx context.Context, c SpecCheck) error {
	state := "success"
	if !c.OK {
		state = "failure"
	}
	summary := c.Summary
	if len(summary) > 140 {
		summary = summary[:137] + "..."
	}
	err := p.call(ctx, "set commit status", func() (*github.Response, error) {
		_, resp, err := p.statuses.CreateStatus(ctx, p.Owner, p.Repo, c.SHA, &github.RepoStatus{
			State: github.String(state), Description: github.String(summary), Context: github.String(SpecCheckContext)})
		return resp, err
	})
	if err != nil {
		return err
	}
	id, err := p.specComment(ctx, c.Number)
	if err != nil {
		return err
	}
	body := github.String(specCheckMarker + "\n" + c.Body)
	switch {
	case id != 0:
		return p.call(ctx, "edit comment", func() (*github.Response, error) {
			_, resp, err := p.issues.EditComment(ctx, p.Owner, p.Repo, id, &github.IssueComment{Body: body})
			return resp, err
		})
	case !c.OK:
		return p.call(ctx, "comment", func() (*github.Response, error) {
			_, resp, err := p.issues.CreateComment(ctx, p.Owner, p.Repo, c.Number, &github.IssueComment{Body: body})
			return resp, err
		})
	}
	return nil
}

// specComment finds the ID of cairn check's comment on a pull request; 0
// when there is none.
func (p *Provider) specComment(ctx context.Context, number int) (int64, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		var page []*github.IssueComment
		var next int
		err := p.call(ctx, "list comments", func() (*github.Response, error) {
			cs, resp, err := p.issues.ListComments(ctx, p.Owner, p.Repo, number, opts)
			page = cs
			if resp != nil {
				next = resp.NextPage
			}
			return resp, err
		})
		if err != nil {
			return 0, err
		}
		for _, c := range page {
			if strings.HasPrefix(c.GetBody(), specCheckMarker) {
				return c.GetID(), nil
			}
		}
		if next == 0 {
			return 0, nil
		}
		opts.Page = next
	}
}
