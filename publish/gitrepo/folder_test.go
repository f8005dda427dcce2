package gitrepo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func TestFolder(t *testing.T) {
	bare := newRemote(t, map[string]string{"clusters/a.yaml": "a\n", "clusters/prod/b.yaml": "b\n", "policies/p.yaml": "p\n"})
	r, err := Clone(context.Background(), Remote{URL: bare}, filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := r.Base()
	files, err := r.Folder(base, "clusters")
	if err != nil || len(files) != 2 || string(files["clusters/a.yaml"]) != "a\n" || string(files["clusters/prod/b.yaml"]) != "b\n" {
		t.Fatalf("Folder: %v %v", files, err)
	}
	if _, err := r.Folder(base, "nosuch"); err == nil {
		t.Fatal("a folder that is not there was read")
	}

	// A symlink in the folder: a Change would write it back as a regular
	// file, so the folder is refused.
	commitSymlink(t, bare, "clusters/link.yaml", "a.yaml")
	if err := r.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	base, _ = r.Base()
	if _, err := r.Folder(base, "clusters"); err == nil || !strings.Contains(err.Error(), "clusters/link.yaml is not a regular file") {
		t.Fatalf("a folder with a symlink: %v", err)
	}
}

// commitSymlink commits a symlink at name pointing to target onto main.
func commitSymlink(t *testing.T, bare, name, target string) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: bare, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if _, err := wt.Add(name); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "person", Email: "p@example.com", When: time.Now()}
	if _, err := wt.Commit("link", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}
