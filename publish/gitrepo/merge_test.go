package gitrepo

import (
	"context"
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/object"
)

func stepChange(root, content string) Build {
	return func(*object.Commit) (Change, error) {
		return Change{Root: root, Files: map[string][]byte{root + "/kustomization.yaml": []byte(content)},
			Message: "cairn: step\n\nCairn-Step: s\n", Name: "cairn", Email: "cairn@example.com"}, nil
	}
}

func TestMerge(t *testing.T) {
	ctx := context.Background()
	sig := object.Signature{Name: "cairn", Email: "cairn@example.com"}
	bare := newRemote(t, map[string]string{"clusters/a.yaml": "a\n", "rendered/b/kustomization.yaml": "old\n"})
	r := clone(t, bare)
	a, err := r.Publish(ctx, "cairn/a/s", stepChange("rendered/a", "a1\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Publish(ctx, "cairn/b/s", stepChange("rendered/b", "b1\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Publish(ctx, "cairn/c/s", stepChange("rendered/c", "c1\n"))
	if err != nil {
		t.Fatal(err)
	}

	// The first merge is a fast-forward.
	got, err := r.Merge(ctx, "cairn/a/s", a.Commit.String(), "rendered/a", "merge a", sig)
	if err != nil || got != a.Commit {
		t.Fatalf("fast-forward: %s %v, want %s", got, err, a.Commit)
	}
	// The next, made on the older base, is a merge commit keeping both.
	got, err = r.Merge(ctx, "cairn/b/s", b.Commit.String(), "rendered/b", "merge b", sig)
	if err != nil {
		t.Fatal(err)
	}
	files := readBranch(t, bare, "main")
	if files["rendered/a/kustomization.yaml"] != "a1\n" || files["rendered/b/kustomization.yaml"] != "b1\n" || files["clusters/a.yaml"] != "a\n" {
		t.Fatalf("main after two merges: %v", files)
	}
	if m, _ := r.Commit(got.String()); m == nil || len(m.ParentHashes) != 2 || m.ParentHashes[1] != b.Commit {
		t.Fatalf("merge commit %s: %+v", got, m)
	}
	// Merging again changes nothing.
	if again, err := r.Merge(ctx, "cairn/b/s", b.Commit.String(), "rendered/b", "merge b", sig); err != nil || again != got {
		t.Fatalf("merged again: %s %v", again, err)
	}

	// A person changes rendered/c on main by hand: cairn does not merge
	// over it, nor a branch that moved.
	commitTo(t, bare, "main", map[string]string{"rendered/c/kustomization.yaml": "by hand\n"}, "hand edit")
	if _, err := r.Merge(ctx, "cairn/c/s", c.Commit.String(), "rendered/c", "merge c", sig); !errors.Is(err, ErrNotMergeable) {
		t.Fatalf("a base that changed the step's folder: %v", err)
	}
	if _, err := r.Merge(ctx, "cairn/c/s", a.Commit.String(), "rendered/c", "merge c", sig); !errors.Is(err, ErrNotMergeable) {
		t.Fatalf("a branch that moved: %v", err)
	}
}
