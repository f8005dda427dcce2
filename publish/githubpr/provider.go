package githubpr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/cairn-dev/cairn/publish"
)

// pulls, issues and statuses are the go-github calls cairn makes.
type pulls interface {
	List(ctx context.Context, owner, repo string, opts *github.PullRequestListOptions) ([]*github.PullRequest, *github.Response, error)
	Create(ctx context.Context, owner, repo string, pr *github.NewPullRequest) (*github.PullRequest, *github.Response, error)
	Edit(ctx context.Context, owner, repo string, number int, pr *github.PullRequest) (*github.PullRequest, *github.Response, error)
	Merge(ctx context.Context, owner, repo string, number int, commitMessage string, opts *github.PullRequestOptions) (*github.PullRequestMergeResult, *github.Response, error)
}

type statuses interface {
	CreateStatus(ctx context.Context, owner, repo, ref string, status *github.RepoStatus) (*github.RepoStatus, *github.Response, error)
}

type issues interface {
	ReplaceLabelsForIssue(ctx context.Context, owner, repo string, number int, labels []string) ([]*github.Label, *github.Response, error)
	CreateComment(ctx context.Context, owner, repo string, number int, comment *github.IssueComment) (*github.IssueComment, *github.Response, error)
	ListComments(ctx context.Context, owner, repo string, number int, opts *github.IssueListCommentsOptions) ([]*github.IssueComment, *github.Response, error)
	EditComment(ctx context.Context, owner, repo string, id int64, comment *github.IssueComment) (*github.IssueComment, *github.Response, error)
	DeleteComment(ctx context.Context, owner, repo string, id int64) (*github.Response, error)
}

// Provider keeps cairn's pull requests on GitHub.
type Provider struct {
	Owner, Repo, Base string
	// MergeMethod is how cairn merges (auto-merge): merge, squash or
	// rebase; empty is GitHub's default, merge.
	MergeMethod string
	pulls       pulls
	issues      issues
	statuses    statuses
	transport   *transport
	// MaxWait bounds one wait for a rate limit; longer waits fail.
	MaxWait time.Duration
	// History is how far back List reads closed pull requests: a step
	// whose pull request was closed or merged longer ago is not known
	// from it. 0 reads them all.
	History time.Duration
	// sleep waits; tests replace it.
	sleep func(context.Context, time.Duration) error
	now   func() time.Time
	mem   memory
	Log   *slog.Logger
}

// Options configure New.
type Options struct {
	// BaseURL is the API's URL; empty for api.github.com. GitHub
	// Enterprise: https://HOST/api/v3/.
	BaseURL string
	Token   string
	// Transport is the HTTP transport underneath; nil for the default.
	Transport http.RoundTripper
	// MergeMethod: see Provider.MergeMethod.
	MergeMethod string
	// WriteSpacing is the least time between two writes (POST, PATCH,
	// PUT, DELETE), as GitHub asks of integrations: 0 is the duration in
	// $CAIRN_GITHUB_WRITE_SPACING (SpacingEnv), else one second; a
	// negative value, or 0 in the variable, does not space them.
	WriteSpacing time.Duration
	// WritesPerHour is the budget of writes in any hour: a write beyond it
	// fails with ErrWriteBudget and is made by a later pass. 0 is 500,
	// GitHub's secondary limit on content creation; negative: no budget.
	WritesPerHour int
	// History: see Provider.History; 0 is DefaultHistory, negative reads
	// the whole history.
	History time.Duration
	Log     *slog.Logger
}

// New returns a provider for owner/repo, whose steps merge into base.
func New(owner, repo, base string, o Options) (*Provider, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	spacing, err := writeSpacing(o.WriteSpacing)
	if err != nil {
		return nil, err
	}
	t := newTransport(o.Transport, o.Token, newWriteGate(spacing, o.WritesPerHour, log))
	c := github.NewClient(&http.Client{Transport: t, Timeout: 30 * time.Second})
	if o.BaseURL != "" {
		u, err := url.Parse(strings.TrimSuffix(o.BaseURL, "/") + "/")
		if err != nil {
			return nil, fmt.Errorf("github base URL: %w", err)
		}
		c.BaseURL = u
	}
	t.host = c.BaseURL.Host
	switch o.MergeMethod {
	case "", "merge", "squash", "rebase":
	default:
		return nil, fmt.Errorf("merge method %q: want merge, squash or rebase", o.MergeMethod)
	}
	return &Provider{Owner: owner, Repo: repo, Base: base, MergeMethod: o.MergeMethod, pulls: c.PullRequests, issues: c.Issues, statuses: c.Repositories,
		transport: t, MaxWait: 15 * time.Minute, History: history(o.History), sleep: sleepCtx, now: time.Now, Log: log}, nil
}

func history(h time.Duration) time.Duration {
	switch {
	case h == 0:
		return DefaultHistory
	case h < 0:
		return 0
	}
	return h
}

// Counts returns the API calls made so far.
func (p *Provider) Counts() Counts { return p.transport.counts() }

// Find implements publish.Provider: the newest pull request of branch.
func (p *Provider) Find(ctx context.Context, branch string) (*publish.PullRequest, error) {
	var found []*github.PullRequest
	err := p.call(ctx, "list pull requests", func() (*github.Response, error) {
		prs, resp, err := p.pulls.List(ctx, p.Owner, p.Repo, &github.PullRequestListOptions{
			State: "all", Head: p.Owner + ":" + branch, Base: p.Base, Sort: "created", Direction: "desc",
			ListOptions: github.ListOptions{PerPage: 10}})
		found = prs
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	for _, f := range found {
		if p.ours(f) {
			p.mem.found(f)
			pr := convert(f)
			return &pr, nil
		}
	}
	return nil, nil
}

// Open implements publish.Provider. A pull request already open for the
// branch (GitHub answers 422) is adopted and brought up to date. The
// status comes first, on the head: a run that dies after creating the
// pull request leaves only its labels to repair, and the repair need not
// set the status again.
func (p *Provider) Open(ctx context.Context, want publish.PullRequest) (*publish.PullRequest, error) {
	if err := p.status(ctx, want); err != nil {
		return nil, err
	}
	var created *github.PullRequest
	err := p.call(ctx, "create pull request", func() (*github.Response, error) {
		pr, resp, err := p.pulls.Create(ctx, p.Owner, p.Repo, &github.NewPullRequest{
			Title: github.String(want.Title), Head: github.String(want.Branch), Base: github.String(p.Base),
			Body: github.String(want.Body), MaintainerCanModify: github.Bool(false)})
		created = pr
		return resp, err
	})
	var gerr *github.ErrorResponse
	if errors.As(err, &gerr) && gerr.Response != nil && gerr.Response.StatusCode == http.StatusUnprocessableEntity && strings.Contains(gerr.Error(), "already exists") {
		existing, ferr := p.Find(ctx, want.Branch)
		if ferr != nil || existing == nil || existing.State != publish.Open {
			return nil, fmt.Errorf("create pull request for %s: %w", want.Branch, err)
		}
		p.Log.Info("adopting the open pull request of the branch", "branch", want.Branch, "number", existing.Number)
		want.Number = existing.Number
		return &want, p.Update(ctx, want)
	}
	if err != nil {
		return nil, err
	}
	// Labels last: a run that dies before them leaves labels to repair.
	want.Number, want.State = created.GetNumber(), publish.Open
	unlabelled := want
	unlabelled.Labels = nil
	p.mem.remember(unlabelled)
	if err := p.labels(ctx, want.Number, want.Labels); err != nil {
		return nil, err
	}
	p.mem.remember(want)
	return &want, nil
}

// Update implements publish.Provider, writing only what differs from the
// pull request as cairn last read or wrote it: the labels when they are
// not the same set, the status when the head moved or its state or
// description changed (statusDue), the title and body when they differ.
// The body is written last: a run that dies before it leaves a body to
// repair.
func (p *Provider) Update(ctx context.Context, want publish.PullRequest) error {
	old, known := p.mem.last(want.Number)
	if !known || !sameSet(old.Labels, want.Labels) {
		if err := p.labels(ctx, want.Number, want.Labels); err != nil {
			return err
		}
	}
	text := !known || old.Title != want.Title || old.Body != want.Body
	if statusDue(old, known, want, text) {
		if err := p.status(ctx, want); err != nil {
			return err
		}
		if known {
			old.Head, old.Check = want.Head, want.Check
			p.mem.remember(old)
		}
	}
	if text {
		err := p.call(ctx, "edit pull request", func() (*github.Response, error) {
			_, resp, err := p.pulls.Edit(ctx, p.Owner, p.Repo, want.Number, &github.PullRequest{
				Title: github.String(want.Title), Body: github.String(want.Body)})
			return resp, err
		})
		if err != nil {
			return err
		}
	}
	want.State = publish.Open
	p.mem.remember(want)
	return nil
}

// statusDue reports whether the status of want's head is to be written:
// GitHub keeps every status written (up to 1,000 per commit and context,
// then refuses more), so one is written only when it says something new.
// That is when the head moved, or when the state or description differs
// from the status cairn last wrote on this head; when cairn knows the pull
// request only from a list (which shows no status), when its text
// changes, as the body says everything the status does.
func statusDue(old publish.PullRequest, known bool, want publish.PullRequest, text bool) bool {
	switch {
	case !known || old.Head != want.Head:
		return true
	case old.Check != (publish.Check{}):
		return old.Check != want.Check
	}
	return text
}

// sameSet reports whether two label lists hold the same labels.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// status sets cairn's commit status on the pull request's head.
func (p *Provider) status(ctx context.Context, pr publish.PullRequest) error {
	if pr.Head == "" || pr.Check.State == "" {
		return nil
	}
	return p.call(ctx, "set commit status", func() (*github.Response, error) {
		_, resp, err := p.statuses.CreateStatus(ctx, p.Owner, p.Repo, pr.Head, &github.RepoStatus{
			State: github.String(pr.Check.State), Description: github.String(pr.Check.Description),
			Context: github.String(publish.CheckContext)})
		return resp, err
	})
}

// Close implements publish.Provider: a comment saying why, then closing.
// Both are safe to repeat: the comment carries a marker naming the head
// it closes, and is posted only when no comment of the pull request
// carries that marker yet, so a run killed between the two calls, or one
// overlapping another that closed it meanwhile, leaves one comment. Two
// runs that both found none and both posted see each other's comment
// afterwards: the later one is deleted (comment IDs only grow).
func (p *Provider) Close(ctx context.Context, pr publish.PullRequest, reason string) error {
	marker := "<!-- cairn close-comment head=" + pr.Head + " -->"
	marked := func() ([]int64, error) {
		all, err := p.listComments(ctx, pr.Number)
		var ids []int64
		for _, c := range all {
			if strings.Contains(c.GetBody(), marker) {
				ids = append(ids, c.GetID())
			}
		}
		return ids, err
	}
	ids, err := marked()
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		var mine int64
		err := p.call(ctx, "comment", func() (*github.Response, error) {
			c, resp, err := p.issues.CreateComment(ctx, p.Owner, p.Repo, pr.Number, &github.IssueComment{
				Body: github.String("cairn closed this pull request: " + reason + "\n\n" + marker)})
			mine = c.GetID()
			return resp, err
		})
		if err != nil {
			return err
		}
		// Two runs that both found no comment both posted one: the later
		// deletes its own.
		if ids, err := marked(); err == nil && mine != 0 && len(ids) > 1 && slices.Min(ids) != mine {
			_ = p.call(ctx, "delete comment", func() (*github.Response, error) { return p.issues.DeleteComment(ctx, p.Owner, p.Repo, mine) })
		}
	}
	// The marker tells a pull request cairn closed (and may reopen when
	// its step comes back) from one a person closed (left closed).
	body := pr.Body
	if !strings.Contains(body, closedMarker) {
		body += "\n" + closedMarker + "\n"
	}
	return p.call(ctx, "close pull request", func() (*github.Response, error) {
		_, resp, err := p.pulls.Edit(ctx, p.Owner, p.Repo, pr.Number, &github.PullRequest{State: github.String("closed"), Body: github.String(body)})
		return resp, err
	})
}

const closedMarker = "<!-- cairn closed -->"

// ours reports whether a pull request is cairn's: a cairn branch (a
// step's, or a spec change's) of this very repo, never one of a fork that
// happens to use the same name.
func (p *Provider) ours(pr *github.PullRequest) bool {
	repo, ref := pr.GetHead().GetRepo().GetFullName(), pr.GetHead().GetRef()
	return (strings.HasPrefix(ref, publish.BranchPrefix) || strings.HasPrefix(ref, publish.SpecBranchPrefix)) && strings.EqualFold(repo, p.Owner+"/"+p.Repo)
}

func (p *Provider) labels(ctx context.Context, number int, labels []string) error {
	if len(labels) == 0 {
		return nil
	}
	return p.call(ctx, "set labels", func() (*github.Response, error) {
		_, resp, err := p.issues.ReplaceLabelsForIssue(ctx, p.Owner, p.Repo, number, slices.Clone(labels))
		return resp, err
	})
}

func convert(pr *github.PullRequest) publish.PullRequest {
	out := publish.PullRequest{Number: pr.GetNumber(), Branch: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef(),
		Title: pr.GetTitle(), Body: pr.GetBody(), Head: pr.GetHead().GetSHA(), State: publish.Open}
	switch {
	case pr.GetMerged() || pr.MergedAt != nil:
		out.State = publish.Merged
	case pr.GetState() == "closed":
		out.State = publish.Closed
		if strings.Contains(pr.GetBody(), closedMarker) {
			out.CloseReason = "closed by cairn"
		}
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}
