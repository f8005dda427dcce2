package gitrepo

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// What cairn can prove of a step branch's head, recomputed from the
// objects, never read from the commit message (anyone who may push can
// write cairn's name, email and trailers):
//
//   - exact: the head is the commit cairn makes now. It has one parent, a
//     commit of the base's history holding the same step folder as the
//     base, and its tree is that parent's tree with exactly the folder
//     replaced by what cairn rendered; and the base does not hold it (a
//     step merged in an earlier cycle is no pull request's head again).
//     With Change.OnBase, the parent must be the base itself. Only such
//     a head is kept as it is: adopted as the pull request's head, and
//     merged by auto-merge.
//   - pushable: cairn may push over it, losing nothing of a person's:
//     a commit signed by cairn's key (when Repo.SignKey is set); cairn's
//     own earlier change (one parent in the base's history, a tree that
//     differs from it only inside the folder, cairn's committer and a
//     Cairn-Step trailer: all it holds is an older rendering of the folder
//     cairn owns); or a commit the base already holds (a step merged in an
//     earlier cycle, a branch reset to the base).
//   - foreign: anything else is a person's commit (ForeignError).
type proof int

const (
	foreign proof = iota
	exact
	pushable
)

// provenance is the proof of a head, with the base an exact head was made
// on, or why a foreign head is not cairn's.
type provenance struct {
	proof proof
	base  plumbing.Hash
	why   string
}

// ForeignError: the branch's head is a commit cairn cannot prove it made
// (see the proofs above); cairn leaves the branch alone.
type ForeignError struct {
	Branch string
	// Head is the branch's head; Committer its committer's email.
	Head      plumbing.Hash
	Committer string
	// Why says what the proof found, for the pull request and the outcome.
	Why string
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s: %v (%s by %s: %s)", e.Branch, ErrForeignCommit, short(e.Head), e.Committer, e.Why)
}

// Unwrap makes a ForeignError an ErrForeignCommit.
func (e *ForeignError) Unwrap() error { return ErrForeignCommit }

// prove says what cairn can prove of head, given fresh, the commit it
// makes now of change on base.
func (r *Repo) prove(head, fresh, base *object.Commit, c Change) (provenance, error) {
	if head.Hash == fresh.Hash {
		return provenance{proof: exact, base: base.Hash}, nil
	}
	parent, err := r.parentOnBase(head, base)
	if err != nil {
		return provenance{}, err
	}
	if o := r.objs(); parent != nil && o.folder(parent, c.Root) == o.folder(base, c.Root) && (!c.OnBase || parent.Hash == base.Hash) {
		ok, err := r.onlyFolder(parent, head, c.Root, o.folder(fresh, c.Root))
		if err != nil {
			return provenance{}, err
		}
		merged, err := r.held(head, base)
		if err != nil {
			return provenance{}, err
		}
		switch {
		case ok && merged:
			// An earlier cycle's step, merged: pushed over by a new
			// commit on the base (see inHistory).
			return provenance{proof: pushable}, nil
		case ok:
			return provenance{proof: exact, base: parent.Hash}, nil
		}
	}
	if r.SignKey != nil && signedBy(head, r.SignKey) {
		return provenance{proof: pushable}, nil
	}
	if parent != nil && head.Committer.Email == c.Email && strings.Contains(head.Message, "\nCairn-Step: ") {
		if ok, err := r.onlyFolder(parent, head, c.Root, r.objs().folder(head, c.Root)); err != nil || ok {
			return provenance{proof: pushable}, err
		}
	}
	if held, err := head.IsAncestor(base); err != nil || held {
		return provenance{proof: pushable}, err
	}
	why, err := r.whyForeign(head, parent, c)
	return provenance{proof: foreign, why: why}, err
}

// holds reports whether head is exact for the change on base (see the
// proofs above), from the hash of the change's folder: its parent is in
// the base's history with the same folder as the base, and its tree is
// the parent's with the folder replaced. It also returns that parent. A
// change the base holds already is no change: holds leaves it to commit,
// which refuses it.
func (r *Repo) holds(head, base *object.Commit, c Change) (plumbing.Hash, bool, error) {
	if _, err := splitPath(c.Root); err != nil {
		return plumbing.ZeroHash, false, nil // commit says what is wrong
	}
	sub, err := hashFolder(c.Root, c.Files)
	if err != nil {
		return plumbing.ZeroHash, false, nil
	}
	o := r.objs()
	if sub == o.folder(base, c.Root) {
		return plumbing.ZeroHash, false, nil
	}
	parent, err := r.parentOnBase(head, base)
	if err != nil || parent == nil || o.folder(parent, c.Root) != o.folder(base, c.Root) || (c.OnBase && parent.Hash != base.Hash) {
		return plumbing.ZeroHash, false, err
	}
	ok, err := r.onlyFolder(parent, head, c.Root, sub)
	if err != nil || !ok {
		return plumbing.ZeroHash, false, err
	}
	if merged, err := r.held(head, base); err != nil || merged {
		return plumbing.ZeroHash, false, err
	}
	return parent.Hash, true, nil
}

// held reports whether the base holds head (inHistory), remembering a
// base that does not: the next check, on a base that moved on from it,
// walks only what is new.
func (r *Repo) held(head, base *object.Commit) (bool, error) {
	known := r.notHeld.get(head.Hash)
	if known == base.Hash {
		return false, nil
	}
	in, err := inHistory(head, base, known)
	if err == nil && !in {
		r.notHeld.put(head.Hash, base.Hash)
	}
	return in, err
}

// inHistory reports whether c is base or one of its ancestors: a step
// merged in an earlier cycle, whose folder the base changed since and
// changed back. Such a head is never exact: GitHub opens no pull request
// for a head the base holds ("No commits between"), so a new cycle needs
// a new commit on the base. The walk from base goes no further back than
// c's commit time (no commit made before c can hold it), nor into
// notHeld, a commit known not to hold c (zero when none); a history cut
// short (a shallow clone) is read as not holding it.
func inHistory(c, base *object.Commit, notHeld plumbing.Hash) (bool, error) {
	if c.Hash == base.Hash {
		return true, nil
	}
	found := false
	valid := object.CommitFilter(func(x *object.Commit) bool { return x.Hash == c.Hash })
	limit := object.CommitFilter(func(x *object.Commit) bool {
		return x.Hash == notHeld || x.Committer.When.Before(c.Committer.When)
	})
	err := object.NewFilterCommitIter(base, &valid, &limit).ForEach(func(*object.Commit) error {
		found = true
		return storer.ErrStop
	})
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	return found, err
}

// heldCache maps a head to the newest base known not to hold it.
type heldCache struct {
	mu sync.Mutex
	m  map[plumbing.Hash]plumbing.Hash
}

// maxHeldCache bounds the heads remembered; beyond it the cache starts
// over (a walk then costs what it did without one).
const maxHeldCache = 4096

func (h *heldCache) get(head plumbing.Hash) plumbing.Hash {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[head]
}

func (h *heldCache) put(head, base plumbing.Hash) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxHeldCache {
		h.m = map[plumbing.Hash]plumbing.Hash{}
	}
	h.m[head] = base
}

// parentOnBase returns head's only parent when it is part of the base's
// history; nil otherwise.
func (r *Repo) parentOnBase(head, base *object.Commit) (*object.Commit, error) {
	if len(head.ParentHashes) != 1 {
		return nil, nil
	}
	parent, err := r.repo.CommitObject(head.ParentHashes[0])
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, nil
	}
	if err != nil || parent.Hash == base.Hash {
		return parent, err
	}
	if ok, err := parent.IsAncestor(base); err != nil || !ok {
		return nil, err
	}
	return parent, nil
}

// onlyFolder reports whether head's tree is parent's with the folder at
// root replaced by sub: a tree hash recomputed and compared.
func (r *Repo) onlyFolder(parent, head *object.Commit, root string, sub plumbing.Hash) (bool, error) {
	tree, err := r.objs().tree(parent.TreeHash)
	if err != nil {
		return false, err
	}
	want, err := r.objs().replaceTree(tree, strings.Split(root, "/"), sub)
	if err != nil {
		return false, err
	}
	return want == head.TreeHash, nil
}

// signedBy reports whether c carries one valid OpenPGP signature by key.
func signedBy(c *object.Commit, key *openpgp.Entity) bool {
	if strings.Count(c.PGPSignature, "-----BEGIN PGP SIGNATURE-----") != 1 {
		return false
	}
	unsigned := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(unsigned); err != nil {
		return false
	}
	rd, err := unsigned.Reader()
	if err != nil {
		return false
	}
	_, err = openpgp.CheckArmoredDetachedSignature(openpgp.EntityList{key}, rd, strings.NewReader(c.PGPSignature), nil)
	return err == nil
}

// whyForeign says, for a person and in a few words, why head is not a
// commit cairn can prove it made. parent is head's parent on the base, or
// nil.
func (r *Repo) whyForeign(head, parent *object.Commit, c Change) (string, error) {
	switch {
	case len(head.ParentHashes) != 1:
		return fmt.Sprintf("a commit with %d parents, not one step on the base", len(head.ParentHashes)), nil
	case parent == nil:
		return fmt.Sprintf("made on %s, which is not part of the base", short(head.ParentHashes[0])), nil
	}
	from, err := parent.Tree()
	if err != nil {
		return "", err
	}
	to, err := head.Tree()
	if err != nil {
		return "", err
	}
	changes, err := object.DiffTree(from, to)
	if err != nil {
		return "", err
	}
	var outside []string
	for _, ch := range changes {
		name := ch.To.Name
		if name == "" {
			name = ch.From.Name
		}
		if !strings.HasPrefix(name, c.Root+"/") {
			outside = append(outside, name)
		}
	}
	switch {
	case len(outside) > 3:
		return fmt.Sprintf("it changes files outside %s: %s and %d more", c.Root, strings.Join(outside[:3], ", "), len(outside)-3), nil
	case len(outside) > 0:
		return fmt.Sprintf("it changes files outside %s: %s", c.Root, strings.Join(outside, ", ")), nil
	}
	return fmt.Sprintf("a change to %s by %s, not cairn's rendering", c.Root, head.Committer.Email), nil
}

// stepCommit reports whether c is one step: one parent, and a tree that
// differs from the parent's only inside the folder at root.
func (r *Repo) stepCommit(c *object.Commit, root string) (bool, error) {
	if len(c.ParentHashes) != 1 {
		return false, nil
	}
	parent, err := r.repo.CommitObject(c.ParentHashes[0])
	if err != nil {
		return false, err
	}
	return r.onlyFolder(parent, c, root, r.objs().folder(c, root))
}
