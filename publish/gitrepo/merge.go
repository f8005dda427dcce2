package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNotMergeable: a step's commit cannot be merged into the base as it
// is (its branch moved, or the base changed the step's folder by hand).
var ErrNotMergeable = errors.New("not mergeable")

// MergeCommit returns the commit that merges head, a step's commit that
// changes only the folder root on top of an earlier base, into base:
// head itself when base is its parent (a fast-forward), else a merge
// commit whose tree is base's with root taken from head. A base that
// changed root since head's parent is refused with ErrNotMergeable: a
// person decides. squash makes a commit with base as its only parent
// instead of a merge commit (GitHub's squash and rebase methods). key,
// when set, signs the commit it makes.
func MergeCommit(r *git.Repository, base, head *object.Commit, root, message string, sig object.Signature, squash bool, key *openpgp.Entity) (plumbing.Hash, error) {
	return mergeCommit(objects{repo: r}, base, head, root, message, sig, squash, key)
}

func mergeCommit(o objects, base, head *object.Commit, root, message string, sig object.Signature, squash bool, key *openpgp.Entity) (plumbing.Hash, error) {
	r := o.repo
	if len(head.ParentHashes) != 1 {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s is not a step commit (%d parents)", ErrNotMergeable, short(head.Hash), len(head.ParentHashes))
	}
	parent, err := r.CommitObject(head.ParentHashes[0])
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if parent.Hash == base.Hash && !squash {
		return head.Hash, nil
	}
	if ok, err := parent.IsAncestor(base); err != nil || !ok {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s was not made on the base %s", ErrNotMergeable, short(head.Hash), short(base.Hash))
	}
	was, _ := o.subtree(parent, root)
	now, _ := o.subtree(base, root)
	if was != now {
		return plumbing.ZeroHash, fmt.Errorf("%w: the base changed %s since %s was made on %s", ErrNotMergeable, root, short(head.Hash), short(parent.Hash))
	}
	sub, _ := o.subtree(head, root)
	baseTree, err := o.tree(base.TreeHash)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tree, err := o.replaceTree(baseTree, strings.Split(root, "/"), sub)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("merge %s: %w", short(head.Hash), err)
	}
	sig.When = head.Committer.When
	if base.Committer.When.After(sig.When) {
		sig.When = base.Committer.When
	}
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree, ParentHashes: []plumbing.Hash{base.Hash, head.Hash}}
	if squash {
		c.ParentHashes = c.ParentHashes[:1]
	}
	if key != nil {
		if c.PGPSignature, err = signature(c, key); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("sign the merge of %s: %w", short(head.Hash), err)
		}
	}
	return store(r, c)
}

// signature is an armored detached OpenPGP signature of the commit, as
// go-git signs the commits it makes.
func signature(c *object.Commit, key *openpgp.Entity) (string, error) {
	unsigned := &plumbing.MemoryObject{}
	if err := c.Encode(unsigned); err != nil {
		return "", err
	}
	rd, err := unsigned.Reader()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&b, key, rd, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

func short(h plumbing.Hash) string { return h.String()[:12] }

// Merge merges a step's branch into the base branch on the remote, if
// the branch still points at head and head changes only the folder root
// on its parent: a fast-forward, or a merge commit when other steps were
// merged meanwhile (see MergeCommit). The push carries a lease on the
// base; a base that moved meanwhile is fetched and the merge made again, a
// bounded number of times. It returns the base's new head.
func (r *Repo) Merge(ctx context.Context, branch, head, root, message string, sig object.Signature) (plumbing.Hash, error) {
	var last error
	for range MaxAttempts {
		if err := r.Fetch(ctx, branch); err != nil {
			return plumbing.ZeroHash, err
		}
		tip, err := r.RemoteBranch(branch)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if tip == nil || tip.Hash.String() != head {
			return plumbing.ZeroHash, fmt.Errorf("%w: %s no longer points at %s", ErrNotMergeable, branch, head)
		}
		// A fast-forward takes the whole commit: only one that changes
		// nothing but the step's folder is merged.
		if ok, err := r.stepCommit(tip, root); err != nil {
			return plumbing.ZeroHash, err
		} else if !ok {
			return plumbing.ZeroHash, fmt.Errorf("%w: %s changes more than %s on its parent", ErrNotMergeable, short(tip.Hash), root)
		}
		base, err := r.Base()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if ok, err := tip.IsAncestor(base); err == nil && ok {
			return base.Hash, nil // merged already
		}
		merged, err := mergeCommit(r.objs(), base, tip, root, message, sig, false, r.SignKey)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		// The lease on the base makes the forced push safe: it lands only
		// if the base is still where the merge was made on.
		if _, err = r.push(ctx, r.remote.Base, merged, base); err == nil {
			return merged, nil
		}
		if !rejected(err) {
			return plumbing.ZeroHash, fmt.Errorf("push %s: %w", r.remote.Base, err)
		}
		last = err
	}
	return plumbing.ZeroHash, fmt.Errorf("merge %s: %w after %d attempts: %v", branch, ErrRejected, MaxAttempts, last)
}
