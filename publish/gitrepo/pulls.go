package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The bounds of a pull request's files Extract writes out: a person's
// pull request is input like any other.
const (
	maxExtractFiles = 20000
	maxExtractBytes = 256 << 20
)

// ErrTooLarge: a commit holds more files, or bytes, under the folders
// asked for than Extract writes out.
var ErrTooLarge = errors.New("too large")

// FetchPull fetches the head of pull request number, which GitHub keeps
// at refs/pull/<number>/head in the base repo (a fork's too), and returns
// its commit, which must be sha: the head the provider listed. A head
// that moved since is an error; the next pass sees the new one.
func (r *Repo) FetchPull(ctx context.Context, number int, sha string) (*object.Commit, error) {
	if number <= 0 || !plumbing.IsHash(sha) {
		return nil, fmt.Errorf("fetch pull request #%d at %q: not a pull request's head", number, sha)
	}
	local := plumbing.ReferenceName(fmt.Sprintf("refs/remotes/origin/pull/%d", number))
	if c, err := r.repo.CommitObject(plumbing.NewHash(sha)); err == nil {
		return c, nil
	}
	spec := config.RefSpec(fmt.Sprintf("+refs/pull/%d/head:%s", number, local))
	err := r.repo.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: r.remote.Auth, Force: true})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, fmt.Errorf("fetch pull request #%d of %s: %w", number, redact(r.remote.URL), scrub(err, r.remote.URL))
	}
	c, err := r.repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return nil, fmt.Errorf("pull request #%d: head %s is not refs/pull/%d/head any more: %w", number, sha, number, err)
	}
	return c, nil
}

// ChangedPaths are the files a pull request with head changes against
// base: those that differ between head and the commit it forked from
// (their merge base), as GitHub's "Files changed" shows them.
func (r *Repo) ChangedPaths(base, head *object.Commit) ([]string, error) {
	bases, err := head.MergeBase(base)
	if err != nil {
		return nil, fmt.Errorf("merge base of %s and %s: %w", short(head.Hash), short(base.Hash), err)
	}
	if len(bases) == 0 {
		return nil, fmt.Errorf("%s shares no history with the base %s", short(head.Hash), short(base.Hash))
	}
	from, err := bases[0].Tree()
	if err != nil {
		return nil, err
	}
	to, err := head.Tree()
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(from, to)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, ch := range changes {
		for _, name := range []string{ch.From.Name, ch.To.Name} {
			if name != "" && (len(paths) == 0 || paths[len(paths)-1] != name) {
				paths = append(paths, name)
			}
		}
	}
	return paths, nil
}

// Extract writes the regular files of commit c under the folders roots
// into dir, as a checkout of c would hold them, and nothing else (no
// symlink, no submodule). More than maxExtractFiles files or
// maxExtractBytes bytes is an error.
func (r *Repo) Extract(c *object.Commit, dir string, roots ...string) error {
	tree, err := c.Tree()
	if err != nil {
		return err
	}
	files, size := 0, int64(0)
	return tree.Files().ForEach(func(f *object.File) error {
		if !under(f.Name, roots) || (f.Mode != filemode.Regular && f.Mode != filemode.Executable) {
			return nil
		}
		files, size = files+1, size+f.Size
		if files > maxExtractFiles || size > maxExtractBytes {
			return fmt.Errorf("%s: more than %d files or %d MiB under %v: %w", short(c.Hash), maxExtractFiles, maxExtractBytes>>20, roots, ErrTooLarge)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		rd, err := f.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		out, err := os.Create(p)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, rd); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// under reports whether path is in one of the folders roots.
func under(path string, roots []string) bool {
	for _, root := range roots {
		if strings.HasPrefix(path, strings.TrimSuffix(root, "/")+"/") {
			return true
		}
	}
	return false
}
