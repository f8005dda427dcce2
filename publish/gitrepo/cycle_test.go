package gitrepo

import (
	"context"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// A step's branch outlives its merge (GitHub keeps it unless the repo
// deletes head branches). When the step comes back and renders the same
// folder onto a base whose folder is back where it was, the merged head
// is never kept when the base holds it (GitHub would answer "No commits
// between"), nor when the change asks for a commit on the base itself
// (OnBase, a new cycle): a new commit is made on today's base. A head the
// base does not hold stays kept otherwise.
func TestAStepMergedInAnEarlierCycleGetsACommitOnTheBase(t *testing.T) {
	tests := []struct {
		name   string
		merge  string // how the first cycle's head reached main: merge, fast-forward, squash, or none
		onBase bool
		kept   bool // the first cycle's head is kept
	}{
		{"merge commit", "merge", false, false},
		{"merge commit, a new cycle", "merge", true, false},
		{"fast-forward", "fast-forward", false, false},
		{"squash: the base does not hold the head", "squash", false, true},
		{"squash, a new cycle", "squash", true, false},
		{"not merged, the base moved elsewhere", "none", false, true},
		{"not merged, but asked on the base", "none", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n", "rendered/db/kustomization.yaml": "v0\n", "rendered/db/PLAN.md": "plan\n"})
			first, err := clone(t, bare).Publish(ctx, "cairn/db/s", change("v1\n"))
			if err != nil || !first.Pushed {
				t.Fatalf("first cycle: %+v %v", first, err)
			}
			repo, err := git.PlainOpen(bare)
			if err != nil {
				t.Fatal(err)
			}
			main := branchHead(t, bare, "main")
			base, _ := repo.CommitObject(main)
			head, _ := repo.CommitObject(first.Commit)
			switch tc.merge {
			case "merge", "squash":
				h, err := MergeCommit(repo, base, head, "rendered/db", "merge\n", object.Signature{Name: "GitHub", Email: "noreply@github.com"}, tc.merge == "squash", nil)
				if err != nil {
					t.Fatal(err)
				}
				setBranch(t, bare, "main", h, nil)
			case "fast-forward":
				setBranch(t, bare, "main", first.Commit, nil)
			}
			// The folder goes back (a step the other way, merged), and
			// something else lands on main.
			commitTo(t, bare, "main", map[string]string{"rendered/db/kustomization.yaml": "v0\n"}, "the step back")
			today := commitTo(t, bare, "main", map[string]string{"clusters/other.yaml": "spec\n"}, "another cluster")

			build := func(b *object.Commit) (Change, error) {
				c, err := change("v1\n")(b)
				c.OnBase = tc.onBase
				return c, err
			}
			again, err := clone(t, bare).Publish(ctx, "cairn/db/s", build)
			if err != nil {
				t.Fatal(err)
			}
			if tc.kept {
				if again.Pushed || again.Commit != first.Commit {
					t.Fatalf("%+v, want the first cycle's head %s kept", again, first.Commit)
				}
				return
			}
			if !again.Pushed || again.Commit == first.Commit || again.Base != today || branchHead(t, bare, "cairn/db/s") != again.Commit {
				t.Fatalf("%+v, want a new commit on %s (first %s)", again, today, first.Commit)
			}
			c, _ := repo.CommitObject(again.Commit)
			if len(c.ParentHashes) != 1 || c.ParentHashes[0] != today {
				t.Errorf("the new commit's parents %v, want the base %s", c.ParentHashes, today)
			}
			if held, _ := inHistory(c, mustCommit(t, repo, today), plumbing.ZeroHash); held {
				t.Error("the base holds the new commit")
			}
			// And the next pass keeps it.
			if kept, err := clone(t, bare).Publish(ctx, "cairn/db/s", build); err != nil || kept.Pushed || kept.Commit != again.Commit {
				t.Fatalf("the pass after: %+v %v", kept, err)
			}
		})
	}
}

func mustCommit(t testing.TB, repo *git.Repository, h plumbing.Hash) *object.Commit {
	t.Helper()
	c, err := repo.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// What a repo remembers of a base that does not hold a head never hides
// a later base that does: checked on one repo across the merge.
func TestTheHeldCacheFollowsTheBase(t *testing.T) {
	ctx := context.Background()
	bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n"})
	r := clone(t, bare)
	first, err := r.Publish(ctx, "cairn/db/s", change("v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := git.PlainOpen(bare)
	head := mustCommit(t, repo, first.Commit)
	steps := []struct {
		name string
		move func()
		held bool
	}{
		{"before the merge", func() {}, false},
		{"the base moved elsewhere", func() { commitTo(t, bare, "main", map[string]string{"clusters/other.yaml": "x\n"}, "other") }, false},
		{"the same base again", func() {}, false},
		{"merged", func() {
			base := mustCommit(t, repo, branchHead(t, bare, "main"))
			h, err := MergeCommit(repo, base, head, "rendered/db", "merge\n", object.Signature{Name: "GitHub", Email: "noreply@github.com"}, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			setBranch(t, bare, "main", h, nil)
		}, true},
		{"a commit after the merge", func() { commitTo(t, bare, "main", map[string]string{"clusters/other.yaml": "y\n"}, "other") }, true},
	}
	for _, s := range steps {
		s.move()
		if err := r.Fetch(ctx, "cairn/db/s"); err != nil {
			t.Fatal(err)
		}
		base, err := r.Base()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.held(head, base); err != nil || got != s.held {
			t.Errorf("%s: held %v %v, want %v", s.name, got, err, s.held)
		}
	}
}
