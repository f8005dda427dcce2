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
		return nil
	}
	return fmt.Errorf("fetch records: %w", scrub(err, r.remote.URL))
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

// Record returns the record at ref as last fetched; nil when there is
// none.
func (r *Repo) Record(ref string) ([]byte, error) {
	if !strings.HasPrefix(ref, RecordPrefix) {
		return nil, fmt.Errorf("record %s is outside %s", ref, RecordPrefix)
	}
	h, err := r.repo.Reference(plumbing.ReferenceName(ref), false)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if h.Type() != plumbing.HashReference {
		return nil, fmt.Errorf("record %s is not a blob", ref)
	}
	data, err := r.blob(h.Hash())
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", ref, err)
	}
	return data, nil
}

// RecordWrite is one record to store: Data under Ref, if the ref still
// holds Old (nil: the ref must not exist).
type RecordWrite struct {
	Ref       string
	Data, Old []byte
}

// WriteRecord stores data under ref on the remote, if the ref still holds
// old (nil: the ref must not exist). A concurrent writer makes it fail
// with a rejected push.
func (r *Repo) WriteRecord(ctx context.Context, ref string, data []byte, old []byte) error {
	return r.WriteRecords(ctx, []RecordWrite{{Ref: ref, Data: data, Old: old}})[0]
}

// WriteRecords stores the records in one push, each under its own lease,
// and returns each one's error, in order. A push turned down (a lease
// failed, and with it the whole push) writes each record alone, so only
// those at fault come back failed.
func (r *Repo) WriteRecords(ctx context.Context, ws []RecordWrite) []error {
	errs := make([]error, len(ws))
	if len(ws) == 0 {
		return errs
	}
	opts := &git.PushOptions{RemoteName: "origin", Auth: r.remote.Auth}
	for i, w := range ws {
		spec, lease, err := r.stageRecord(w)
		if err != nil {
			errs[i] = err
			return errs
		}
		opts.RefSpecs = append(opts.RefSpecs, spec)
		if lease != "" {
			opts.RequireRemoteRefs = append(opts.RequireRemoteRefs, lease)
		}
	}
	err := scrub(r.repo.PushContext(ctx, opts), r.remote.URL)
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		return errs
	}
	if len(ws) == 1 {
		errs[0] = fmt.Errorf("write record %s: %w", ws[0].Ref, err)
		return errs
	}
	// Whatever turned the push down (a lease, or a ref another writer
	// made, whose object go-git looks for and does not find), each record
	// is written alone: only those at fault fail.
	for i, w := range ws {
		errs[i] = r.WriteRecord(ctx, w.Ref, w.Data, w.Old)
	}
	return errs
}

// stageRecord stores a record's blob and points the local ref at it, and
// returns the push's refspec and lease: creating a ref is refused by the
// server if it exists by then; an update is forced only under a lease on
// the old content.
func (r *Repo) stageRecord(w RecordWrite) (spec, lease config.RefSpec, err error) {
	if !strings.HasPrefix(w.Ref, RecordPrefix) {
		return "", "", fmt.Errorf("record %s is outside %s", w.Ref, RecordPrefix)
	}
	h, err := storeBlob(r.repo, w.Data)
	if err != nil {
		return "", "", err
	}
	name := plumbing.ReferenceName(w.Ref)
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(name, h)); err != nil {
		return "", "", err
	}
	if w.Old == nil {
		return config.RefSpec(w.Ref + ":" + w.Ref), "", nil
	}
	return config.RefSpec("+" + w.Ref + ":" + w.Ref), config.RefSpec(plumbing.ComputeHash(plumbing.BlobObject, w.Old).String() + ":" + w.Ref), nil
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
