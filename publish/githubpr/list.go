package githubpr

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/cairn-dev/cairn/publish"
)

// DefaultHistory is how far back List reads closed pull requests by
// default (Options.History).
const DefaultHistory = 90 * 24 * time.Hour

// listSlack re-reads pull requests updated a little before the last
// list's newest: GitHub's timestamps have whole seconds, and its lists
// may lag a write by a moment.
const listSlack = time.Minute

// memory is what a provider knows of cairn's pull requests: what the last
// list and cairn's own writes showed, by number. It lets a long-running
// provider read only what changed since its last list.
type memory struct {
	mu    sync.Mutex
	prs   map[int]known
	mark  time.Time // the newest update the lists have shown
	ready bool      // a first, full list was made
}

type known struct {
	pr      publish.PullRequest
	updated time.Time
}

// List implements publish.Provider: cairn's pull requests into the base,
// newest first. It reads the pull requests of the base by last update,
// newest first, and stops at the first one updated before the list
// before this one (usually one conditional read, answered 304). The first
// list of a provider also reads every open pull request, and stops at
// those closed longer than History ago. GitHub cannot filter pull
// requests by a head prefix or a label, so the pages hold other pull
// requests too; only cairn's are kept.
func (p *Provider) List(ctx context.Context) ([]publish.PullRequest, error) {
	p.mem.mu.Lock()
	ready, mark := p.mem.ready, p.mem.mark
	p.mem.mu.Unlock()
	horizon := time.Time{}
	if p.History > 0 {
		horizon = p.now().Add(-p.History)
	}
	var got []*github.PullRequest
	if !ready {
		open, err := p.pages(ctx, "open", "created", func(*github.PullRequest) bool { return false })
		if err != nil {
			return nil, err
		}
		got, mark = open, horizon.Add(listSlack)
	}
	changed, err := p.pages(ctx, "all", "updated", func(pr *github.PullRequest) bool {
		return pr.GetUpdatedAt().Time.Before(mark.Add(-listSlack))
	})
	if err != nil {
		return nil, err
	}
	return p.mem.apply(append(got, changed...), p.ours, horizon), nil
}

// pages reads the pull requests of the base in state, sorted by sort,
// newest first, until stop says a pull request and the rest are older
// than needed.
func (p *Provider) pages(ctx context.Context, state, sort string, stop func(*github.PullRequest) bool) ([]*github.PullRequest, error) {
	opts := &github.PullRequestListOptions{State: state, Base: p.Base, Sort: sort, Direction: "desc", ListOptions: github.ListOptions{PerPage: 100}}
	var out []*github.PullRequest
	for {
		var page []*github.PullRequest
		var next int
		err := p.call(ctx, "list pull requests", func() (*github.Response, error) {
			prs, resp, err := p.pulls.List(ctx, p.Owner, p.Repo, opts)
			page = prs
			if resp != nil {
				next = resp.NextPage
			}
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, pr := range page {
			if stop(pr) {
				return out, nil
			}
			out = append(out, pr)
		}
		if next == 0 {
			return out, nil
		}
		opts.Page = next
	}
}

// apply takes in what a list read, forgets closed pull requests older
// than horizon, and returns cairn's pull requests, newest first.
func (m *memory) apply(got []*github.PullRequest, ours func(*github.PullRequest) bool, horizon time.Time) []publish.PullRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prs == nil {
		m.prs = map[int]known{}
	}
	for _, pr := range got {
		u := pr.GetUpdatedAt().Time
		m.mark = maxTime(m.mark, u)
		if !ours(pr) {
			continue
		}
		m.prs[pr.GetNumber()] = known{pr: convert(pr), updated: u}
	}
	m.ready = true
	out := make([]publish.PullRequest, 0, len(m.prs))
	for n, k := range m.prs {
		if k.pr.State != publish.Open && k.updated.Before(horizon) {
			delete(m.prs, n)
			continue
		}
		out = append(out, k.pr)
	}
	slices.SortFunc(out, func(a, b publish.PullRequest) int { return cmp.Compare(b.Number, a.Number) })
	return out
}

// last returns what the provider knows of pull request n.
func (m *memory) last(n int) (publish.PullRequest, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.prs[n]
	return k.pr, ok
}

// found records a pull request as GitHub answered it.
func (m *memory) found(pr *github.PullRequest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prs == nil {
		m.prs = map[int]known{}
	}
	m.prs[pr.GetNumber()] = known{pr: convert(pr), updated: pr.GetUpdatedAt().Time}
}

// remember records a pull request as cairn just wrote it.
func (m *memory) remember(pr publish.PullRequest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prs == nil {
		m.prs = map[int]known{}
	}
	k := m.prs[pr.Number]
	k.pr = pr
	m.prs[pr.Number] = k
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
