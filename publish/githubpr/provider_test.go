package githubpr

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
)

func newProvider(t *testing.T, srvURL, token string) (*Provider, *[]time.Duration) {
	t.Helper()
	p, err := New("o", "r", "main", Options{BaseURL: srvURL, Token: token, WriteSpacing: -1})
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	p.sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return sleepCtx(ctx, d) }
	return p, &waits
}

func want(branch string) publish.PullRequest {
	return publish.PullRequest{Branch: branch, Title: "cairn: db: step", Body: "body", Labels: []string{"cairn", "cairn/scalein"}}
}

func TestOpenAdoptsTheOpenPullRequestOfItsBranch(t *testing.T) {
	ctx := context.Background()
	f := githubtest.New(t)
	p, _ := newProvider(t, f.URL, f.Token)
	first, err := p.Open(ctx, want("cairn/db/s"))
	if err != nil || first.Number != 1 {
		t.Fatalf("%+v %v", first, err)
	}
	// Another publisher (or a run that crashed before recording it) opens
	// the same branch again: GitHub answers 422 and the PR is adopted.
	w := want("cairn/db/s")
	w.Title = "cairn: db: newer title"
	second, err := p.Open(ctx, w)
	if err != nil || second.Number != 1 {
		t.Fatalf("adopt: %+v %v", second, err)
	}
	if open := f.Open(); len(open) != 1 || open[0].Title != "cairn: db: newer title" || len(open[0].Labels) != 2 {
		t.Fatalf("open pull requests: %+v", open)
	}
}

func TestListFollowsPagination(t *testing.T) {
	f := githubtest.New(t)
	for i := range 250 {
		head := fmt.Sprintf("feature-%d", i)
		if i%2 == 0 {
			head = fmt.Sprintf("cairn/db/step-%d", i)
		}
		f.PRs = append(f.PRs, &githubtest.PR{Number: i + 1, State: "open", Title: "t", Head: githubtest.Ref{Ref: head}, Base: githubtest.Ref{Ref: "main"}})
	}
	p, _ := newProvider(t, f.URL, f.Token)
	prs, err := p.List(context.Background())
	if err != nil || len(prs) != 125 {
		t.Fatalf("listed %d cairn pull requests, want 125: %v", len(prs), err)
	}
	// The open ones, 3 pages; then those updated lately, newest first,
	// up to History: all 250, in 3 pages.
	if c := p.Counts(); c.Reads != 6 || c.Writes != 0 {
		t.Errorf("calls: %+v, want 6 pages read", c)
	}
}

func TestRateLimitsAreWaitedOut(t *testing.T) {
	for _, kind := range []string{"secondary", "primary", "429"} {
		t.Run(kind, func(t *testing.T) {
			f := githubtest.New(t)
			f.LimitNext, f.LimitKind = 2, kind
			p, waits := newProvider(t, f.URL, f.Token)
			if _, err := p.Find(context.Background(), "cairn/db/s"); err != nil {
				t.Fatal(err)
			}
			if len(*waits) != 2 {
				t.Fatalf("waited %v, want two waits", *waits)
			}
			for _, d := range *waits {
				if d < time.Second || d > 3*time.Second {
					t.Errorf("waited %s; GitHub asked for about a second", d)
				}
			}
		})
	}
	t.Run("longer than cairn waits", func(t *testing.T) {
		f := githubtest.New(t)
		f.LimitNext, f.LimitKind = 1, "secondary"
		p, _ := newProvider(t, f.URL, f.Token)
		p.MaxWait = 500 * time.Millisecond
		if _, err := p.Find(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "longer than") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestPollingUsesConditionalRequests(t *testing.T) {
	f := githubtest.New(t)
	p, _ := newProvider(t, f.URL, f.Token)
	ctx := context.Background()
	if _, err := p.Open(ctx, want("cairn/db/s")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if pr, err := p.Find(ctx, "cairn/db/s"); err != nil || pr == nil || pr.State != publish.Open {
			t.Fatalf("%+v %v", pr, err)
		}
	}
	if c := p.Counts(); c.NotModified != 2 {
		t.Errorf("counts %+v: the 2nd and 3rd polls must be 304s", c)
	}
}

func TestTheTokenIsNeverInAnError(t *testing.T) {
	f := githubtest.New(t)
	p, _ := newProvider(t, f.URL, "ghs_wrong_secret")
	_, err := p.Find(context.Background(), "x")
	if err == nil || strings.Contains(err.Error(), "ghs_wrong_secret") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err = %v", err)
	}
}

func TestClosedByCairnIsToldApartFromClosedByAPerson(t *testing.T) {
	ctx := context.Background()
	f := githubtest.New(t)
	p, _ := newProvider(t, f.URL, f.Token)
	a, _ := p.Open(ctx, want("cairn/db/a"))
	b, _ := p.Open(ctx, want("cairn/db/b"))
	if err := p.Close(ctx, *a, "superseded by cairn/db/c"); err != nil {
		t.Fatal(err)
	}
	f.PRs[b.Number-1].State = "closed" // a person closed it
	ga, _ := p.Find(ctx, "cairn/db/a")
	gb, _ := p.Find(ctx, "cairn/db/b")
	if ga.State != publish.Closed || ga.CloseReason == "" || gb.State != publish.Closed || gb.CloseReason != "" {
		t.Fatalf("a=%+v b=%+v", ga, gb)
	}
	if c := f.PRs[0].Comments; len(c) != 1 || !strings.Contains(c[0], "superseded by cairn/db/c") {
		t.Errorf("close comment: %v", c)
	}
}
