package publish

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// A batch writes every record it holds in one push, each under the lease
// of what the remote held before the batch: a record another writer made
// meanwhile is not written over and comes back failed, by branch, while
// the others land; reads in the batch see its own writes, and after a
// failure the next read sees the other writer's.
func TestLocalBatchWritesUnderEachLease(t *testing.T) {
	ctx := context.Background()
	bare := gitbed.New(t, map[string]string{"README.md": "gitops\n"})
	clone := func() *Local {
		r, err := gitrepo.Clone(ctx, gitrepo.Remote{URL: bare}, filepath.Join(t.TempDir(), "w"))
		if err != nil {
			t.Fatal(err)
		}
		return &Local{Repo: r, Base: "main"}
	}
	a, b := clone(), clone()
	if _, err := a.Open(ctx, PullRequest{Branch: "cairn/x/s1", Title: "x before"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.List(ctx); err != nil {
		t.Fatal(err)
	}
	a.BeginBatch()
	x, err := a.Find(ctx, "cairn/x/s1")
	if err != nil || x == nil {
		t.Fatalf("find x: %v %v", x, err)
	}
	x.Title = "x by a"
	if err := a.Update(ctx, *x); err != nil {
		t.Fatal(err)
	}
	x.Title = "x by a, again"
	if err := a.Update(ctx, *x); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Open(ctx, PullRequest{Branch: "cairn/y/s1", Title: "y by a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Open(ctx, PullRequest{Branch: "cairn/z/s1", Title: "z by a"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Comment(ctx, PullRequest{Branch: "cairn/x/s1"}, "one"); err != nil {
		t.Fatal(err)
	}
	if err := a.Comment(ctx, PullRequest{Branch: "cairn/x/s1"}, "two"); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Find(ctx, "cairn/y/s1"); got == nil || got.Title != "y by a" {
		t.Fatalf("the batch does not read its own write: %+v", got)
	}
	if cs, err := a.Comments(ctx, PullRequest{Branch: "cairn/x/s1"}); err != nil || len(cs) != 2 {
		t.Fatalf("comments in the batch: %v %v", cs, err)
	}
	// Nothing is on the remote yet; then another writer records z.
	if got, _ := b.Find(ctx, "cairn/y/s1"); got != nil {
		t.Fatalf("a held write reached the remote before the flush: %+v", got)
	}
	if _, err := b.Open(ctx, PullRequest{Branch: "cairn/z/s1", Title: "z by b"}); err != nil {
		t.Fatal(err)
	}
	failed := a.FlushBatch(ctx)
	if len(failed) != 1 || failed["cairn/z/s1"] == nil {
		t.Fatalf("failed %v, want z's record only", failed)
	}
	if _, err := b.List(ctx); err != nil {
		t.Fatal(err)
	}
	for branch, want := range map[string]string{"cairn/x/s1": "x by a, again", "cairn/y/s1": "y by a", "cairn/z/s1": "z by b"} {
		got, err := b.Find(ctx, branch)
		if err != nil || got == nil || got.Title != want {
			t.Errorf("%s on the remote: %+v %v, want %q", branch, got, err, want)
		}
	}
	if cs, err := b.Comments(ctx, PullRequest{Branch: "cairn/x/s1"}); err != nil || len(cs) != 2 || cs[1] != "two" {
		t.Errorf("comments on the remote: %v %v", cs, err)
	}
	if got, _ := a.Find(ctx, "cairn/z/s1"); got == nil || got.Title != "z by b" {
		t.Errorf("after the failed write, a reads %+v, want b's record", got)
	}
}
