package gitrepo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// A pull request's head is fetched from refs/pull/<n>/head; its changed
// paths are those since it forked, not what the base changed since; and
// Extract writes only the files under the roots asked for.
func TestAPullRequestsHeadAndChanges(t *testing.T) {
	ctx := context.Background()
	bare := gitbed.New(t, map[string]string{"clusters/kv.yaml": "kv\n", "README.md": "r\n"})
	who := object.Signature{Name: "A Person", Email: "person@example.com", When: time.Now()}
	head := gitbed.Forge(t, bare, "feature", "", map[string]string{"clusters/db.yaml": "db\n", "policies/p.yaml": "p\n", "docs/x.md": "x\n"}, "change", who)
	// The base moves on after the fork.
	gitbed.Commit(t, bare, map[string]string{"clusters/later.yaml": "later\n"})
	// GitHub keeps the pull request's head at refs/pull/7/head.
	b, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Storer.SetReference(plumbing.NewHashReference("refs/pull/7/head", head)); err != nil {
		t.Fatal(err)
	}

	r, err := Clone(ctx, Remote{URL: bare, Base: "main"}, filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := r.Base()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.FetchPull(ctx, 8, head.String()); err == nil {
		t.Error("fetched pull request #8, which has no head ref")
	}
	if _, err := r.FetchPull(ctx, 7, strings.Repeat("0", 40)); err == nil || !strings.Contains(err.Error(), "not refs/pull/7/head any more") {
		t.Errorf("a head that moved: %v", err)
	}
	c, err := r.FetchPull(ctx, 7, head.String())
	if err != nil {
		t.Fatal(err)
	}
	paths, err := r.ChangedPaths(base, c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"clusters/db.yaml", "docs/x.md", "policies/p.yaml"}; !slices.Equal(paths, want) {
		t.Errorf("changed paths %v, want %v: the pull request's own, not the base's later.yaml", paths, want)
	}
	dir := t.TempDir()
	if err := r.Extract(c, dir, "clusters", "policies/"); err != nil {
		t.Fatal(err)
	}
	var got []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(got)
	if want := []string{"clusters/db.yaml", "clusters/kv.yaml", "policies/p.yaml"}; !slices.Equal(got, want) {
		t.Errorf("extracted %v, want %v", got, want)
	}
}
