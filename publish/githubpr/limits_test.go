package githubpr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
)

// GitHub refuses a title over 256 characters or a body over 65,536 (422),
// on create and on edit, and so does the test server.
func TestTheServerRefusesTitlesAndBodiesOverGitHubsLimits(t *testing.T) {
	ctx := context.Background()
	f := githubtest.New(t)
	p, _ := newProvider(t, f.URL, f.Token)
	long := want("cairn/db/s")
	long.Title = strings.Repeat("é", 257)
	if _, err := p.Open(ctx, long); err == nil || !strings.Contains(err.Error(), "422") || !strings.Contains(err.Error(), "title is too long (maximum is 256 characters)") {
		t.Fatalf("a title of 257 characters: %v", err)
	}
	ok := want("cairn/db/s")
	ok.Title = strings.Repeat("é", 256)
	pr, err := p.Open(ctx, ok)
	if err != nil {
		t.Fatalf("a title of 256 characters: %v", err)
	}
	pr.Body = strings.Repeat("x", publish.MaxBody+1)
	if err := p.Update(ctx, *pr); err == nil || !strings.Contains(err.Error(), "body is too long") {
		t.Fatalf("a body over the limit: %v", err)
	}
}

// Writes are spaced as GitHub asks, and kept within a budget per hour: a
// write beyond it is deferred, said once in the log.
func TestWritesAreSpacedAndBudgeted(t *testing.T) {
	ctx := context.Background()
	f := githubtest.New(t)
	var logged bytes.Buffer
	p, err := New("o", "r", "main", Options{BaseURL: f.URL, Token: f.Token, WriteSpacing: time.Second, WritesPerHour: 4, Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	g := p.transport.gate
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var slept []time.Duration
	g.now = func() time.Time { return now }
	g.sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); now = now.Add(d); return nil }
	if _, err := p.Open(ctx, want("cairn/db/a")); err != nil { // create, labels
		t.Fatal(err)
	}
	now = now.Add(300 * time.Millisecond)
	if _, err := p.Open(ctx, want("cairn/db/b")); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(slept) != "[1s 700ms 1s]" {
		t.Errorf("waits between writes: %v, want a second after each", slept)
	}
	for range 2 {
		if _, err := p.Open(ctx, want("cairn/db/c")); !errors.Is(err, ErrWriteBudget) {
			t.Fatalf("the fifth write: %v", err)
		}
	}
	if c := p.Counts(); c.Writes != 4 || strings.Count(logged.String(), "deferring GitHub writes") != 1 || !strings.Contains(logged.String(), "budget=4") {
		t.Errorf("writes %+v; log:\n%s", c, logged.String())
	}
	now = now.Add(time.Hour)
	if _, err := p.Open(ctx, want("cairn/db/c")); err != nil {
		t.Fatalf("an hour later: %v", err)
	}
}

// The spacing comes from the options, else from $CAIRN_GITHUB_WRITE_SPACING,
// else it is a second.
func TestWriteSpacingIsConfigurable(t *testing.T) {
	for _, tc := range []struct {
		opt  time.Duration
		env  string
		want time.Duration
	}{{0, "", time.Second}, {0, "0", 0}, {0, "250ms", 250 * time.Millisecond}, {-1, "2s", 0}, {3 * time.Second, "0", 3 * time.Second}} {
		t.Setenv(SpacingEnv, tc.env)
		p, err := New("o", "r", "main", Options{WriteSpacing: tc.opt})
		if err != nil || p.transport.gate.spacing != tc.want {
			t.Errorf("option %s, $%s=%q: spacing %s %v, want %s", tc.opt, SpacingEnv, tc.env, p.transport.gate.spacing, err, tc.want)
		}
	}
	t.Setenv(SpacingEnv, "soon")
	if _, err := New("o", "r", "main", Options{}); err == nil || !strings.Contains(err.Error(), SpacingEnv) {
		t.Errorf("a bad duration: %v", err)
	}
}

// A long-running provider lists only what changed since its last list,
// and closed pull requests only within History.
func TestListReadsOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	f := githubtest.New(t)
	old := time.Now().Add(-48 * time.Hour).UTC().Format(time.RFC3339)
	for i := range 250 {
		pr := &githubtest.PR{Number: i + 1, State: "closed", Title: "t", Head: githubtest.Ref{Ref: fmt.Sprintf("cairn/db/step-%d", i)}, Base: githubtest.Ref{Ref: "main"}, UpdatedAt: old}
		f.PRs = append(f.PRs, pr)
	}
	f.PRs[9].UpdatedAt = "" // closed just now
	p, _ := newProvider(t, f.URL, f.Token)
	p.History = 24 * time.Hour
	prs, err := p.List(ctx)
	if err != nil || len(prs) != 1 || prs[0].Number != 10 {
		t.Fatalf("closed within a day: %+v %v", prs, err)
	}
	if c := p.Counts(); c.Reads != 2 {
		t.Errorf("first list: %+v, want 2 reads (open ones, then the recently updated)", c)
	}
	opened, err := p.Open(ctx, want("cairn/db/new"))
	if err != nil {
		t.Fatal(err)
	}
	before := p.Counts()
	prs, err = p.List(ctx)
	if err != nil || len(prs) != 2 || prs[0].Number != opened.Number || prs[1].Number != 10 {
		t.Fatalf("after opening one: %+v %v", prs, err)
	}
	if c := p.Counts(); c.Reads-before.Reads != 1 {
		t.Errorf("a later list: %+v after %+v, want 1 read", c, before)
	}
}

// Update writes only what differs from what the provider last saw.
func TestUpdateWritesOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	f := githubtest.New(t)
	p, _ := newProvider(t, f.URL, f.Token)
	w := want("cairn/db/s")
	w.Head, w.Check = "0123abc", publish.Check{State: "success", Description: "ready"}
	pr, err := p.Open(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(*publish.PullRequest)
		calls  []string
	}{
		{"labels in another order", func(pr *publish.PullRequest) { pr.Labels = []string{"cairn/scalein", "cairn"} }, nil},
		{"a label more", func(pr *publish.PullRequest) { pr.Labels = append(pr.Labels, "cairn/disruptive") }, []string{"PUT /repos/o/r/issues/1/labels"}},
		{"the body", func(pr *publish.PullRequest) { pr.Body += " more"; pr.Check.State = "pending" },
			[]string{"PATCH /repos/o/r/pulls/1", "POST /repos/o/r/statuses/0123abc"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := map[string]int{}
			for k, v := range f.Calls {
				before[k] = v
			}
			tc.change(pr)
			if err := p.Update(ctx, *pr); err != nil {
				t.Fatal(err)
			}
			var calls []string
			for k, v := range f.Calls {
				if v != before[k] {
					calls = append(calls, k)
				}
			}
			slices.Sort(calls)
			if !slices.Equal(calls, tc.calls) {
				t.Errorf("calls %v, want %v", calls, tc.calls)
			}
		})
	}
}
