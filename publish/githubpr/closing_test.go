package githubpr

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/testbed"
)

// supersede opens the step's pull request (#1) and then makes it
// superseded: the spec asks for what runs, the plan converges.
func supersede(t *testing.T) *hub {
	t.Helper()
	h := newHub(t, etcdSpec)
	h.live = etcdLive
	if o := h.one(); o.Action != publish.ActionOpened {
		t.Fatalf("%+v", o)
	}
	setSpec(t, h.bare, testbed.EtcdSpec(3, "3.5.21", ""))
	return h
}

// closedOnce checks that #1 is closed with one comment saying why.
func closedOnce(t *testing.T, f *githubtest.Server) {
	t.Helper()
	pr := f.PRs[0]
	if pr.State != "closed" || len(pr.Comments) != 1 || !strings.Contains(pr.Comments[0], "cairn closed this pull request: converged") {
		t.Fatalf("#1: state %s, comments %q", pr.State, pr.Comments)
	}
}

// A run killed at any call of closing a superseded pull request leaves it
// for the next run, which closes it with one comment in all.
func TestClosingSurvivesAKillAtEveryCall(t *testing.T) {
	for _, at := range []string{"GET /repos/o/r/issues/1/comments", "POST /repos/o/r/issues/1/comments", "PATCH /repos/o/r/pulls/1"} {
		t.Run(at, func(t *testing.T) {
			h := supersede(t)
			h.f.FailAt = at
			if _, err := publishWith(t, h.bare, h.p, h.live, nil); err == nil || h.f.FailAt != "" {
				t.Fatalf("the run did not die at %s: %v", at, err)
			}
			if o := h.one(); len(o.Closed) != 1 {
				t.Fatalf("the next run: %+v", o)
			}
			closedOnce(t, h.f)
			before := h.p.Counts()
			if o := h.one(); len(o.Closed) != 0 || h.p.Counts().Writes != before.Writes {
				t.Fatalf("a third run: %+v, calls %+v after %+v", o, h.p.Counts(), before)
			}
		})
	}
}

// listThen is a provider that runs then, once, right after a List: another
// run doing its whole pass while this one works from what it listed.
type listThen struct {
	*Provider
	then func()
}

func (l *listThen) List(ctx context.Context) ([]publish.PullRequest, error) {
	prs, err := l.Provider.List(ctx)
	if f := l.then; f != nil {
		l.then = nil
		f()
	}
	return prs, err
}

// A run that lists the pull request open, while another run closes it,
// closes it again without a second comment.
func TestOverlappingRunsLeaveOneCloseComment(t *testing.T) {
	h := supersede(t)
	other, _ := newProvider(t, h.f.URL, h.f.Token)
	stale := &listThen{Provider: h.p, then: func() {
		if out, err := publishWith(t, h.bare, other, h.live, nil); err != nil || len(out[0].Closed) != 1 {
			t.Fatalf("the other run: %+v %v", out, err)
		}
	}}
	if out, err := publishThrough(t, h.bare, stale, h.live); err != nil || len(out[0].Closed) != 1 {
		t.Fatal(out, err)
	}
	if stale.then != nil {
		t.Fatal("the other run did not run")
	}
	closedOnce(t, h.f)
}

// publishThrough is one run through any provider.
func publishThrough(t *testing.T, bare string, prs publish.Provider, liveDoc string) ([]publish.Outcome, error) {
	t.Helper()
	return publishVia(t, bare, prs, liveDoc, nil, nil)
}

// racingIssues posts, on the first comment, the same comment for another
// run first, as two runs do that both found no close comment.
type racingIssues struct {
	issues
	f     *githubtest.Server
	raced bool
}

func (r *racingIssues) CreateComment(ctx context.Context, owner, repo string, n int, c *github.IssueComment) (*github.IssueComment, *github.Response, error) {
	if !r.raced {
		r.raced = true
		if _, _, err := r.issues.CreateComment(ctx, owner, repo, n, c); err != nil {
			return nil, nil, err
		}
	}
	return r.issues.CreateComment(ctx, owner, repo, n, c)
}

// Two runs that both found no close comment and both posted one end with
// one: the later deletes its own.
func TestRacingCloseCommentsEndAsOne(t *testing.T) {
	h := supersede(t)
	h.p.issues = &racingIssues{issues: h.p.issues, f: h.f}
	if o := h.one(); len(o.Closed) != 1 {
		t.Fatalf("%+v", o)
	}
	closedOnce(t, h.f)
}
