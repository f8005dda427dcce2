package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// MaxAttempts bounds how often a rejected push is rebuilt and retried.
const MaxAttempts = 3

// Change is one commit's content: the files of a folder, replacing it.
type Change struct {
	// Root is the folder the files replace, such as "rendered/my-db".
	Root string
	// Files are by slash-separated path from the repo's root, all under Root.
	Files   map[string][]byte
	Message string
	// Name and Email sign the commit as author and committer.
	Name, Email string
}

// Build makes the change for a base commit. Publish calls it again when
// the base has moved since the last attempt.
type Build func(base *object.Commit) (Change, error)

// Result says what Publish did.
type Result struct {
	// Commit is the branch's head after Publish.
	Commit plumbing.Hash
	// Base is the base commit the change was built on.
	Base plumbing.Hash
	// Pushed is false when the branch already held the change.
	Pushed bool
}

// ErrRejected: the remote kept rejecting the push after MaxAttempts.
var ErrRejected = errors.New("push rejected")

// ErrForeignCommit: the branch's head is not a commit cairn can prove it
// made (a person pushed to it); cairn leaves the branch alone. Publish
// returns it as a *ForeignError.
var ErrForeignCommit = errors.New("the branch holds a commit cairn did not make")

// Publish commits the change onto the base branch's head on branch and
// pushes it, unless the branch's head is provably this very change (see
// provenance.go): then the branch is kept. A head cairn cannot prove its
// own is a person's commit: Publish returns a *ForeignError and pushes
// nothing. A push rejected because the branch moved meanwhile (another
// publisher) is fetched, rebuilt and retried up to MaxAttempts times.
func (r *Repo) Publish(ctx context.Context, branch string, build Build) (Result, error) {
	var last error
	for attempt := range MaxAttempts {
		if attempt > 0 || !r.freshFor(branch) {
			if err := r.Fetch(ctx, branch); err != nil {
				return Result{}, err
			}
		}
		base, err := r.Base()
		if err != nil {
			return Result{}, err
		}
		change, err := build(base)
		if err != nil {
			return Result{}, err
		}
		commit, err := r.commit(base, change)
		if err != nil {
			return Result{}, fmt.Errorf("commit %s: %w", branch, err)
		}
		remote, err := r.RemoteBranch(branch)
		if err != nil {
			return Result{}, err
		}
		if remote != nil {
			pv, err := r.prove(remote, commit, base, change)
			if err != nil {
				return Result{}, fmt.Errorf("check the head of %s: %w", branch, err)
			}
			switch pv.proof {
			case foreign:
				return Result{}, &ForeignError{Branch: branch, Head: remote.Hash, Committer: remote.Committer.Email, Why: pv.why}
			case exact:
				// The branch holds this change already, on the base or on
				// an earlier base whose commits since changed nothing the
				// step touches: rewriting it would dismiss reviews for
				// nothing.
				return Result{Commit: remote.Hash, Base: pv.base}, nil
			}
		}
		pushed, err := r.push(ctx, branch, commit.Hash, remote)
		if err == nil {
			return Result{Commit: commit.Hash, Base: base.Hash, Pushed: pushed}, nil
		}
		if !rejected(err) {
			return Result{}, fmt.Errorf("push %s: %w", branch, err)
		}
		last = err
	}
	return Result{}, fmt.Errorf("push %s: %w after %d attempts: %v", branch, ErrRejected, MaxAttempts, last)
}

func subtree(c *object.Commit, root string) (plumbing.Hash, error) {
	tree, err := c.Tree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sub, err := tree.Tree(root)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return sub.Hash, nil
}

// commit makes the change onto base as a commit, in the object store
// only (the working directory is never touched), with the base's time so
// the same change gives the same hash. Objects the store holds already
// are not written again: a pass that changes nothing writes nothing.
func (r *Repo) commit(base *object.Commit, c Change) (*object.Commit, error) {
	root, err := splitPath(c.Root)
	if err != nil {
		return nil, fmt.Errorf("folder %q: %w", c.Root, err)
	}
	sub, err := writeFolder(r.repo, c.Root, c.Files)
	if err != nil {
		return nil, err
	}
	baseTree, err := base.Tree()
	if err != nil {
		return nil, err
	}
	tree, err := replaceTree(r.repo, baseTree, root, sub)
	if err != nil {
		return nil, err
	}
	if tree == base.TreeHash {
		return nil, fmt.Errorf("the change to %s is empty: the base already holds it", c.Root)
	}
	sig := object.Signature{Name: c.Name, Email: c.Email, When: base.Committer.When}
	commit := &object.Commit{Author: sig, Committer: sig, Message: c.Message, TreeHash: tree, ParentHashes: []plumbing.Hash{base.Hash}}
	if r.SignKey != nil {
		if commit.PGPSignature, err = signature(commit, r.SignKey); err != nil {
			return nil, fmt.Errorf("sign: %w", err)
		}
	}
	h, err := store(r.repo, commit)
	if err != nil {
		return nil, err
	}
	return r.repo.CommitObject(h)
}

// push sets branch to commit on the remote, only if the remote branch is
// still where it was fetched (a lease), or still absent.
func (r *Repo) push(ctx context.Context, branch string, commit plumbing.Hash, remote *object.Commit) (bool, error) {
	local := plumbing.NewBranchReferenceName("cairn-push/" + branch)
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(local, commit)); err != nil {
		return false, err
	}
	defer r.repo.Storer.RemoveReference(local)
	dst := plumbing.NewBranchReferenceName(branch)
	opts := &git.PushOptions{RemoteName: "origin", Auth: r.remote.Auth,
		RefSpecs: []config.RefSpec{config.RefSpec(local.String() + ":" + dst.String())}}
	if remote != nil {
		opts.RefSpecs = []config.RefSpec{config.RefSpec("+" + local.String() + ":" + dst.String())}
		opts.RequireRemoteRefs = []config.RefSpec{config.RefSpec(remote.Hash.String() + ":" + dst.String())}
	}
	err := r.repo.PushContext(ctx, opts)
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		// Another publisher pushed the very same commit meanwhile.
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The remote-tracking copy follows, so the rest of the pass sees the
	// branch as it now is without fetching it.
	tracking := plumbing.NewRemoteReferenceName("origin", branch)
	return true, r.repo.Storer.SetReference(plumbing.NewHashReference(tracking, commit))
}

// rejected reports whether a push lost a race: the branch moved (lease,
// non-fast-forward) or another push held the ref's lock.
func rejected(err error) bool {
	msg := err.Error()
	return errors.Is(err, git.ErrNonFastForwardUpdate) || strings.Contains(msg, "required to be") ||
		strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "fetch first") ||
		strings.Contains(msg, "failed to update ref") || strings.Contains(msg, "cannot lock ref")
}
