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
	// OnBase keeps a head only when it was made on the base itself, not
	// on an earlier one: a new cycle of a step whose pull request was
	// merged gets a commit on today's base, never the earlier cycle's.
	OnBase bool
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
		s, err := r.stage(ctx, branch, build, attempt > 0 || !r.freshFor(branch))
		if err != nil {
			return Result{}, err
		}
		if s.done {
			return s.result, nil
		}
		pushed, err := r.push(ctx, branch, s.result.Commit, s.remote)
		if err == nil {
			s.result.Pushed = pushed
			return s.result, nil
		}
		if !rejected(err) {
			return Result{}, fmt.Errorf("push %s: %w", branch, err)
		}
		last = err
	}
	return Result{}, fmt.Errorf("push %s: %w after %d attempts: %v", branch, ErrRejected, MaxAttempts, last)
}

// Staged is a branch's commit made and proven by Stage, its push left to
// PushAll.
type Staged struct {
	branch string
	build  Build
	remote *object.Commit // the branch's head as fetched; nil when absent
	// done: the branch holds the change already; nothing to push.
	done   bool
	result Result
}

// Result is what publishing the branch comes to once pushed (Pushed says
// whether a push is due), or as it is when nothing is to be pushed.
func (s *Staged) Result() Result { return s.result }

// Stage is Publish without its push: the commit made and proven against
// the branch as last fetched (FetchBranches; otherwise the branch is
// fetched first). A *ForeignError or the build's error come back as
// Publish returns them. Hand what is staged to PushAll.
func (r *Repo) Stage(ctx context.Context, branch string, build Build) (*Staged, error) {
	s, err := r.stage(ctx, branch, build, !r.freshFor(branch))
	if err != nil {
		return nil, err
	}
	if !s.done {
		s.result.Pushed = true
	}
	return s, nil
}

// stage is one attempt of Publish up to its push.
func (r *Repo) stage(ctx context.Context, branch string, build Build, fetch bool) (*Staged, error) {
	if fetch {
		if err := r.Fetch(ctx, branch); err != nil {
			return nil, err
		}
	}
	base, err := r.Base()
	if err != nil {
		return nil, err
	}
	change, err := build(base)
	if err != nil {
		return nil, err
	}
	remote, err := r.RemoteBranch(branch)
	if err != nil {
		return nil, err
	}
	// A head that provably holds the change is found from the folder's
	// hash alone, before any object is made: a base that moved elsewhere
	// costs no commit for each step that stays as it is.
	if remote != nil {
		if parent, ok, err := r.holds(remote, base, change); err != nil {
			return nil, fmt.Errorf("check the head of %s: %w", branch, err)
		} else if ok {
			return &Staged{branch: branch, build: build, remote: remote, done: true, result: Result{Commit: remote.Hash, Base: parent}}, nil
		}
	}
	commit, err := r.commit(base, change)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", branch, err)
	}
	s := &Staged{branch: branch, build: build, remote: remote, result: Result{Commit: commit.Hash, Base: base.Hash}}
	if remote != nil {
		pv, err := r.prove(remote, commit, base, change)
		if err != nil {
			return nil, fmt.Errorf("check the head of %s: %w", branch, err)
		}
		switch pv.proof {
		case foreign:
			return nil, &ForeignError{Branch: branch, Head: remote.Hash, Committer: remote.Committer.Email, Why: pv.why}
		case exact:
			// The branch holds this change already, on the base or on an
			// earlier base whose commits since changed nothing the step
			// touches: rewriting it would dismiss reviews for nothing.
			s.done, s.result = true, Result{Commit: remote.Hash, Base: pv.base}
		}
	}
	return s, nil
}

// PushAll pushes the staged branches that need it in one push, each
// under its own lease (the branch where it was fetched, or absent), and
// returns each one's result or error, in order. When the remote turns
// some down (another publisher moved them), each is pushed alone, and
// one turned down again is published as Publish does (fetched, proven,
// built again, a bounded number of times).
func (r *Repo) PushAll(ctx context.Context, staged []*Staged) ([]Result, []error) {
	results, errs := make([]Result, len(staged)), make([]error, len(staged))
	var due []int
	for i, s := range staged {
		results[i] = s.result
		if !s.done {
			due = append(due, i)
		}
	}
	if len(due) == 0 {
		return results, errs
	}
	err := r.pushMany(ctx, staged, due)
	if err == nil {
		return results, errs
	}
	if len(due) == 1 && !rejected(err) {
		errs[due[0]] = fmt.Errorf("push %s: %w", staged[due[0]].branch, err)
		return results, errs
	}
	// Some lease failed, and with it the whole push (go-git checks them
	// all before it sends anything), or the push failed otherwise: each
	// branch is pushed alone with the commit and lease it was staged with,
	// and only one whose own lease fails is fetched and built again.
	for _, i := range due {
		s := staged[i]
		pushed, err := r.push(ctx, s.branch, s.result.Commit, s.remote)
		switch {
		case err == nil:
			results[i].Pushed = pushed
		case rejected(err):
			results[i], errs[i] = r.Publish(ctx, s.branch, s.build)
		default:
			errs[i] = fmt.Errorf("push %s: %w", s.branch, err)
		}
	}
	return results, errs
}

// pushMany pushes the due branches in one push. go-git checks the leases
// against the remote's refs before it sends anything, and the remote
// checks each ref's old value again as it updates it.
func (r *Repo) pushMany(ctx context.Context, staged []*Staged, due []int) error {
	opts := &git.PushOptions{RemoteName: "origin", Auth: r.remote.Auth}
	var locals []plumbing.ReferenceName
	defer func() {
		for _, l := range locals {
			_ = r.repo.Storer.RemoveReference(l)
		}
	}()
	for _, i := range due {
		s := staged[i]
		local := plumbing.NewBranchReferenceName("cairn-push/" + s.branch)
		if err := r.repo.Storer.SetReference(plumbing.NewHashReference(local, s.result.Commit)); err != nil {
			return err
		}
		locals = append(locals, local)
		dst := plumbing.NewBranchReferenceName(s.branch)
		if s.remote == nil {
			opts.RefSpecs = append(opts.RefSpecs, config.RefSpec(local.String()+":"+dst.String()))
			continue
		}
		opts.RefSpecs = append(opts.RefSpecs, config.RefSpec("+"+local.String()+":"+dst.String()))
		opts.RequireRemoteRefs = append(opts.RequireRemoteRefs, config.RefSpec(s.remote.Hash.String()+":"+dst.String()))
	}
	err := scrub(r.repo.PushContext(ctx, opts), r.remote.URL)
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return err
	}
	for _, i := range due {
		s := staged[i]
		tracking := plumbing.NewRemoteReferenceName("origin", s.branch)
		if err := r.repo.Storer.SetReference(plumbing.NewHashReference(tracking, s.result.Commit)); err != nil {
			return err
		}
	}
	return nil
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
	baseTree, err := r.objs().tree(base.TreeHash)
	if err != nil {
		return nil, err
	}
	tree, err := r.objs().replaceTree(baseTree, root, sub)
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
	err := scrub(r.repo.PushContext(ctx, opts), r.remote.URL)
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
	// A branch created meanwhile points at a commit this clone lacks:
	// go-git fails looking for it before it sends anything.
	return errors.Is(err, git.ErrNonFastForwardUpdate) || errors.Is(err, plumbing.ErrObjectNotFound) || strings.Contains(msg, "object not found") || strings.Contains(msg, "required to be") ||
		strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "fetch first") ||
		strings.Contains(msg, "failed to update ref") || strings.Contains(msg, "cannot lock ref")
}
