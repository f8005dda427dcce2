package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ReadSignKey reads an armored OpenPGP private key for signing commits,
// decrypting it with passphrase when it is encrypted.
func ReadSignKey(file, passphrase string) (*openpgp.Entity, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	defer f.Close()
	list, err := openpgp.ReadArmoredKeyRing(f)
	if err != nil || len(list) == 0 {
		return nil, fmt.Errorf("signing key %s: not an armored OpenPGP key: %v", file, err)
	}
	e := list[0]
	if e.PrivateKey == nil {
		return nil, fmt.Errorf("signing key %s holds no private key", file)
	}
	if e.PrivateKey.Encrypted {
		if err := e.PrivateKey.Decrypt([]byte(passphrase)); err != nil {
			return nil, fmt.Errorf("signing key %s: wrong passphrase", file)
		}
	}
	return e, nil
}

// Remote says where the GitOps repo is and how to reach it.
type Remote struct {
	// URL is an https://, ssh:// or file URL, or a local path.
	URL string
	// Auth is nil for local repos; see TokenAuth and SSHAuth.
	Auth transport.AuthMethod
	// Base is the branch specs live on and steps merge into. Default main.
	Base string
	// InsecureHTTP lets credentials go over http:// to a host that is not
	// this machine (CheckTransport): a person's explicit choice, for a git
	// server on a network they trust.
	InsecureHTTP bool
}

// Repo is a clone of the GitOps repo in a working directory.
type Repo struct {
	remote Remote
	dir    string
	repo   *git.Repository
	// SignKey, when set, signs every commit cairn makes (OpenPGP).
	SignKey *openpgp.Entity
	// fresh: the remote-tracking branches under freshPrefix are as the
	// last FetchBranches found them, or as cairn's own pushes since left
	// them; Publish uses them without fetching its branch first.
	fresh       bool
	freshPrefix string
	// checkedOut is the commit the working directory holds (CheckoutBase).
	checkedOut plumbing.Hash
	// trees are decoded trees and replacements kept (trees.go).
	trees treeCache
	// notHeld remembers, by head, the newest base found not to hold it
	// (provenance.go's held): the next walk stops there.
	notHeld heldCache
}

// Clone clones the remote's base branch into dir (which must be empty or
// absent).
func Clone(ctx context.Context, r Remote, dir string) (*Repo, error) {
	if r.Base == "" {
		r.Base = "main"
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("clone %s: %s is not empty", redact(r.URL), dir)
	}
	if err := CheckTransport(r.URL, r.Auth != nil); err != nil && !r.InsecureHTTP {
		return nil, err
	}
	wt := osfs.New(dir)
	dot, err := wt.Chroot(git.GitDirName)
	if err != nil {
		return nil, err
	}
	refs := &refCache{Storage: filesystem.NewStorage(dot, cache.NewObjectLRUDefault())}
	repo, err := git.CloneContext(ctx, refs, wt, &git.CloneOptions{
		URL:           r.URL,
		Auth:          r.Auth,
		ReferenceName: plumbing.NewBranchReferenceName(r.Base),
		SingleBranch:  true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("clone %s (branch %s): %w", redact(r.URL), r.Base, scrub(err, r.URL))
	}
	return &Repo{remote: r, dir: dir, repo: repo}, nil
}

// Dir is the working directory; after Clone it holds the base branch.
func (r *Repo) Dir() string { return r.dir }

// Base returns the base branch's head commit as last fetched.
func (r *Repo) Base() (*object.Commit, error) {
	ref, err := r.repo.Reference(plumbing.NewRemoteReferenceName("origin", r.remote.Base), true)
	if err != nil {
		return nil, fmt.Errorf("base branch %s: %w", r.remote.Base, err)
	}
	return r.repo.CommitObject(ref.Hash())
}

// Fetch updates the base branch and the given branches from the remote.
// Branches that do not exist there are skipped.
func (r *Repo) Fetch(ctx context.Context, branches ...string) error {
	specs := []config.RefSpec{config.RefSpec(fmt.Sprintf("+refs/heads/%[1]s:refs/remotes/origin/%[1]s", r.remote.Base))}
	for _, b := range branches {
		specs = append(specs, config.RefSpec(fmt.Sprintf("+refs/heads/%[1]s:refs/remotes/origin/%[1]s", b)))
	}
	for {
		// Prune drops branches deleted on the remote, so a lease never
		// expects a branch that is gone.
		err := r.repo.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", RefSpecs: specs, Auth: r.remote.Auth, Force: true, Prune: true})
		var missing git.NoMatchingRefSpecError
		switch {
		case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
			return nil
		case errors.As(err, &missing) && len(specs) > 1:
			// A branch that does not exist (yet, or any more): fetch
			// without it, and forget what was fetched of it before.
			specs = slices.DeleteFunc(specs, func(s config.RefSpec) bool {
				gone := strings.Contains(err.Error(), s.Src())
				if gone {
					_ = r.repo.Storer.RemoveReference(s.Dst(""))
				}
				return gone
			})
			if len(specs) == 0 {
				return nil
			}
		default:
			return fmt.Errorf("fetch %s: %w", redact(r.remote.URL), scrub(err, r.remote.URL))
		}
	}
}

// FetchBranches updates, in one fetch, the base branch and every branch
// whose name starts with prefix (cairn's step branches), dropping the
// remote-tracking copies of branches deleted on the remote. Until the next
// call, Publish takes those copies as the remote's state instead of
// fetching its branch again: one fetch a pass instead of one a cluster. A
// copy gone stale meanwhile (a person pushed) costs nothing but a retry:
// every push carries a lease on the branch as fetched, and a rejected one
// is fetched, proven and built again.
func (r *Repo) FetchBranches(ctx context.Context, prefix string) error {
	if prefix == "" || strings.ContainsAny(prefix, "*:^~?[\\ ") {
		return fmt.Errorf("fetch branches: %q is not a branch prefix", prefix)
	}
	specs := []config.RefSpec{
		config.RefSpec(fmt.Sprintf("+refs/heads/%[1]s:refs/remotes/origin/%[1]s", r.remote.Base)),
		config.RefSpec(fmt.Sprintf("+refs/heads/%[1]s*:refs/remotes/origin/%[1]s*", prefix)),
	}
	err := r.repo.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", RefSpecs: specs, Auth: r.remote.Auth, Force: true, Prune: true})
	var missing git.NoMatchingRefSpecError
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.As(err, &missing):
		// No step branch on the remote: drop every copy of one.
		if err := r.Fetch(ctx); err != nil {
			return err
		}
		if err := r.dropRemoteBranches(prefix); err != nil {
			return err
		}
	default:
		return fmt.Errorf("fetch %s: %w", redact(r.remote.URL), scrub(err, r.remote.URL))
	}
	r.fresh, r.freshPrefix = true, prefix
	return nil
}

// dropRemoteBranches removes the remote-tracking copies of the branches
// under prefix.
func (r *Repo) dropRemoteBranches(prefix string) error {
	refs, err := r.repo.References()
	if err != nil {
		return err
	}
	var gone []plumbing.ReferenceName
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if strings.HasPrefix(ref.Name().String(), "refs/remotes/origin/"+prefix) {
			gone = append(gone, ref.Name())
		}
		return nil
	})
	for _, n := range gone {
		if err := r.repo.Storer.RemoveReference(n); err != nil {
			return err
		}
	}
	return nil
}

// freshFor reports whether the remote-tracking copy of branch is as
// fresh as the last FetchBranches.
func (r *Repo) freshFor(branch string) bool {
	return r.fresh && strings.HasPrefix(branch, r.freshPrefix)
}

// RemoteBranch returns the head of a branch on the remote as last fetched,
// or nil when it does not exist.
func (r *Repo) RemoteBranch(branch string) (*object.Commit, error) {
	ref, err := r.repo.Reference(plumbing.NewRemoteReferenceName("origin", branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r.repo.CommitObject(ref.Hash())
}

// CheckoutBase resets the working directory to the base branch's head.
// cairn's own commits never touch the working directory, so a checkout of
// the commit it holds already is skipped: a pass on an unchanged base does
// not walk the repo's files.
func (r *Repo) CheckoutBase() error {
	base, err := r.Base()
	if err != nil {
		return err
	}
	if base.Hash == r.checkedOut {
		return nil
	}
	wt, err := r.repo.Worktree()
	if err != nil {
		return err
	}
	r.checkedOut = plumbing.ZeroHash
	if err := wt.Checkout(&git.CheckoutOptions{Hash: base.Hash, Force: true}); err != nil {
		return fmt.Errorf("checkout base %s: %w", base.Hash, err)
	}
	if err := wt.Clean(&git.CleanOptions{Dir: true}); err != nil {
		return err
	}
	r.checkedOut = base.Hash
	return nil
}

// ReadBase returns a file of the base branch's head commit (as last
// fetched), whatever the working directory holds.
func (r *Repo) ReadBase(path string) ([]byte, error) {
	base, err := r.Base()
	if err != nil {
		return nil, err
	}
	return r.Reader(base)(path)
}

// Reader reads the files of a commit of this repo by their
// slash-separated paths from the repo's root (renderer.ReadEntry's read),
// with the trees it decodes kept (by hash, so never stale): reading each
// cluster's entry point of one commit decodes the rendered/ folder once,
// not once a cluster.
func (r *Repo) Reader(c *object.Commit) func(path string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		data, err := r.readAt(c.TreeHash, path)
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", path, c.Hash, err)
		}
		return data, nil
	}
}

func (r *Repo) readAt(root plumbing.Hash, path string) ([]byte, error) {
	names := strings.Split(path, "/")
	h := root
	for i, n := range names {
		t, err := r.objs().tree(h)
		if err != nil {
			return nil, err
		}
		e, err := t.FindEntry(n)
		if err != nil {
			return nil, object.ErrFileNotFound
		}
		last := i == len(names)-1
		switch {
		case last && e.Mode.IsFile():
			return r.blob(e.Hash)
		case last, e.Mode != filemode.Dir:
			return nil, object.ErrFileNotFound
		}
		h = e.Hash
	}
	return nil, object.ErrFileNotFound
}

// objs are the repo's trees, with what it keeps of them (trees.go).
func (r *Repo) objs() objects { return objects{repo: r.repo, cache: &r.trees} }

// FindCommit returns the commit hash that branch held, fetching the branch
// when the commit is not known locally; nil when it cannot be found (the
// branch is gone and nothing else holds it).
func (r *Repo) FindCommit(ctx context.Context, branch, hash string) (*object.Commit, error) {
	c, err := r.repo.CommitObject(plumbing.NewHash(hash))
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return c, err
	}
	if err := r.Fetch(ctx, branch); err != nil {
		return nil, err
	}
	c, err = r.repo.CommitObject(plumbing.NewHash(hash))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, nil
	}
	return c, err
}
