package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// RecordPrefix is where cairn keeps records in the repo (the local
// provider's pull requests): refs that point at blobs, outside branches
// and tags, so no checkout or merge ever sees them.
const RecordPrefix = "refs/cairn/"

// FetchRecords updates the local copies of every record ref.
func (r *Repo) FetchRecords(ctx context.Context) error {
	err := r.repo.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", Auth: r.remote.Auth, Force: true,
		RefSpecs: []config.RefSpec{config.RefSpec("+" + RecordPrefix + "*:" + RecordPrefix + "*")}})
	var missing git.NoMatchingRefSpecError
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) || errors.As(err, &missing) {
		return r.packRefs()
	}
	return fmt.Errorf("fetch records: %w", err)
}

// Records returns every record under prefix (a path below RecordPrefix),
// by ref name, as last fetched.
func (r *Repo) Records(prefix string) (map[string][]byte, error) {
	refs, err := r.repo.References()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().String()
		if !strings.HasPrefix(name, RecordPrefix+prefix) || ref.Type() != plumbing.HashReference {
			return nil
		}
		data, err := r.blob(ref.Hash())
		if err != nil {
			return fmt.Errorf("record %s: %w", name, err)
		}
		out[name] = data
		return nil
	})
	return out, err
}

// WriteRecord stores data under ref on the remote, if the ref still holds
// old (nil: the ref must not exist). A concurrent writer makes it fail
// with a rejected push.
func (r *Repo) WriteRecord(ctx context.Context, ref string, data []byte, old []byte) error {
	if !strings.HasPrefix(ref, RecordPrefix) {
		return fmt.Errorf("record %s is outside %s", ref, RecordPrefix)
	}
	obj := r.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	h, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return err
	}
	name := plumbing.ReferenceName(ref)
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(name, h)); err != nil {
		return err
	}
	// Creating a ref is refused by the server if it exists by then; an
	// update is forced only under a lease on the old content.
	opts := &git.PushOptions{RemoteName: "origin", Auth: r.remote.Auth,
		RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)}}
	if old != nil {
		opts.RefSpecs = []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)}
		opts.RequireRemoteRefs = []config.RefSpec{config.RefSpec(plumbing.ComputeHash(plumbing.BlobObject, old).String() + ":" + ref)}
	}
	err = r.repo.PushContext(ctx, opts)
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write record %s: %w", ref, err)
	}
	return nil
}

func (r *Repo) blob(h plumbing.Hash) ([]byte, error) {
	b, err := r.repo.BlobObject(h)
	if err != nil {
		return nil, err
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// Merged reports whether commit is part of the base branch (as last
// fetched): the branch that carried it was merged.
func (r *Repo) Merged(commit string) (bool, error) {
	base, err := r.Base()
	if err != nil {
		return false, err
	}
	c, err := r.repo.CommitObject(plumbing.NewHash(commit))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return c.IsAncestor(base)
}

// Commit returns a commit by hash, if it is known locally.
func (r *Repo) Commit(hash string) (*object.Commit, error) {
	return r.repo.CommitObject(plumbing.NewHash(hash))
}
