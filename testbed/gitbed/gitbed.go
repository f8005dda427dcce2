package gitbed

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
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
// the bare repo, as a person would; an empty content removes the file, or
// the folder of that name. It returns the new commit.
func Commit(t *testing.T, bare string, files map[string]string) plumbing.Hash {
	t.Helper()
	return commit(t, bare, files, false)
}

func commit(t *testing.T, bare string, files map[string]string, first bool) plumbing.Hash {
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
	h := commitFiles(t, repo, dir, files, "edit specs", &object.Signature{Name: "p", Email: "p@example.com", When: time.Now()})
	_ = repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", h))
	if err := repo.Push(&git.PushOptions{RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
		t.Fatal(err)
	}
	return h
}

// Forge pushes to branch a commit on main's head made by sig with msg:
// the rendered/ folder of the branch from (when not "") and files on top.
// It is what anyone who may push a branch can write, cairn's name, email
// and trailers included.
func Forge(t *testing.T, bare, branch, from string, files map[string]string, msg string, sig object.Signature) plumbing.Hash {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: bare, ReferenceName: "refs/heads/main", SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{}
	if from != "" {
		maps.Copy(all, Files(t, bare, from, "rendered/"))
	}
	maps.Copy(all, files)
	h := commitFiles(t, repo, dir, all, msg, &sig)
	spec := config.RefSpec("+" + h.String() + ":refs/heads/" + branch)
	if err := repo.Push(&git.PushOptions{RefSpecs: []config.RefSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	return h
}

// Files are the files of a branch of bare whose paths start with prefix,
// by path.
func Files(t *testing.T, bare, branch, prefix string) map[string]string {
	t.Helper()
	repo, ref, err := branchRef(t, bare, branch)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	iter, _ := c.Files()
	_ = iter.ForEach(func(f *object.File) error {
		if strings.HasPrefix(f.Name, prefix) {
			out[f.Name], _ = f.Contents()
		}
		return nil
	})
	return out
}

// Head is the commit a branch of bare points at; zero when it has none.
func Head(t *testing.T, bare, branch string) plumbing.Hash {
	t.Helper()
	_, ref, err := branchRef(t, bare, branch)
	if err != nil {
		return plumbing.ZeroHash
	}
	return ref.Hash()
}

// branchRef opens bare (failing the test when it cannot) and resolves a
// branch of it; the error is the branch's.
func branchRef(t *testing.T, bare, branch string) (*git.Repository, *plumbing.Reference, error) {
	t.Helper()
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	return repo, ref, err
}

// Merge fast-forwards main of the bare repo to branch, as a reviewer
// merging a step's pull request.
func Merge(t *testing.T, bare, branch string) {
	t.Helper()
	repo, ref, err := branchRef(t, bare, branch)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", ref.Hash())); err != nil {
		t.Fatal(err)
	}
}

// WriteFiles writes files under dir; an empty content removes the file,
// or the folder of that name.
func WriteFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if c == "" {
			_ = os.RemoveAll(full)
			continue
		}
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func commitFiles(t *testing.T, repo *git.Repository, dir string, files map[string]string, msg string, sig *object.Signature) plumbing.Hash {
	t.Helper()
	WriteFiles(t, dir, files)
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Branch points branch of bare at the head of from, as `git branch -f`
// on the server would: another publisher's branch, or one reset to main.
func Branch(t *testing.T, bare, branch, from string) {
	t.Helper()
	repo, ref, err := branchRef(t, bare, from)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), ref.Hash())); err != nil {
		t.Fatal(err)
	}
}
