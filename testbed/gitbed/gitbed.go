package gitbed

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// New makes a bare repo whose main branch holds files, committed by a
// person, and returns its path.
func New(t *testing.T, files map[string]string) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "gitops.git")
	if _, err := git.PlainInitWithOptions(bare, &git.PlainInitOptions{Bare: true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}}); err != nil {
		t.Fatal(err)
	}
	commit(t, bare, files, true)
	return bare
}

// Commit commits files (paths relative to the repo's root) onto main of
// the bare repo, as a person would.
func Commit(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	commit(t, bare, files, false)
}

func commit(t *testing.T, bare string, files map[string]string, first bool) {
	t.Helper()
	dir := t.TempDir()
	var repo *git.Repository
	var err error
	if first {
		repo, err = git.PlainInit(dir, false)
		if err == nil {
			_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{bare}})
		}
	} else {
		repo, err = git.PlainClone(dir, false, &git.CloneOptions{URL: bare, ReferenceName: "refs/heads/main", SingleBranch: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit("edit specs", &git.CommitOptions{Author: &object.Signature{Name: "p", Email: "p@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	_ = repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", h))
	if err := repo.Push(&git.PushOptions{RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
		t.Fatal(err)
	}
}

// Merge fast-forwards main of the bare repo to branch, as a reviewer
// merging a step's pull request.
func Merge(t *testing.T, bare, branch string) {
	t.Helper()
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", ref.Hash())); err != nil {
		t.Fatal(err)
	}
}
