package gitrepo

import (
	"io"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

type configRefSpec = config.RefSpec

type gitconfigRemote struct{ URL string }

func (r gitconfigRemote) config() *config.RemoteConfig {
	return &config.RemoteConfig{Name: "origin", URLs: []string{r.URL}}
}

// readBranch returns every file of a branch of a bare repo.
func readBranch(t *testing.T, bare, branch string) map[string]string {
	t.Helper()
	files, err := readBranchErr(bare, branch)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readBranchErr(bare, branch string) (map[string]string, error) {
	repo, err := git.PlainOpen(bare)
	if err != nil {
		return nil, err
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return nil, err
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return nil, err
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	err = tree.Files().ForEach(func(f *object.File) error {
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		out[f.Name] = string(data)
		return err
	})
	return out, err
}
