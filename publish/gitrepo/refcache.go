package gitrepo

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// refCache is the clone's storage with its references held in memory.
// go-git reads a ref by opening its file and, when there is none, by
// scanning packed-refs line by line, and lists refs by walking the refs
// folders: with a fleet's step branches and records (thousands of refs)
// every lookup costs a walk, and a pass that looks each cluster's branch
// up is quadratic. The clone is cairn's own and every write to its refs
// goes through this storage, so the map stays what the files say: loaded
// with one walk, then kept in step with each write. A name the map does
// not hold is looked up in the files too, so a miss is never wrong.
//
// The copies of the remote's refs (remote-tracking branches under
// refs/remotes/, records under RecordPrefix) are held in memory only and
// never written to a file: a fetch of a fleet's branches would otherwise
// write a file for each (a third of a no-op `cairn propose`), and the
// clone lives no longer than the process that made it (a new process
// clones again), so nothing ever reads them from the files. The clone's
// own refs (HEAD, its local branches) are written as go-git writes them.
//
// Embedding the filesystem storage keeps every other interface go-git
// looks for on it (packfile writing, the object store, the config).
type refCache struct {
	*filesystem.Storage

	mu   sync.Mutex
	refs map[plumbing.ReferenceName]*plumbing.Reference // nil: not loaded
	// copies are the remote's refs (copyOfRemote), in memory only.
	copies map[plumbing.ReferenceName]*plumbing.Reference
}

// copyOfRemote reports whether a ref is a copy of one of the remote's,
// which the clone holds in memory only.
func copyOfRemote(n plumbing.ReferenceName) bool {
	return n.IsRemote() || strings.HasPrefix(n.String(), RecordPrefix)
}

func (s *refCache) load() error {
	if s.refs != nil {
		return nil
	}
	it, err := s.Storage.IterReferences()
	if err != nil {
		return err
	}
	refs := map[plumbing.ReferenceName]*plumbing.Reference{}
	err = it.ForEach(func(r *plumbing.Reference) error {
		refs[r.Name()] = r
		return nil
	})
	if err != nil {
		return err
	}
	s.refs = refs
	return nil
}

// SetReference implements storer.ReferenceStorer.
func (s *refCache) SetReference(r *plumbing.Reference) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if copyOfRemote(r.Name()) {
		s.setCopy(r)
		return nil
	}
	if err := s.Storage.SetReference(r); err != nil {
		s.refs = nil
		return err
	}
	if s.refs != nil {
		s.refs[r.Name()] = r
	}
	return nil
}

func (s *refCache) setCopy(r *plumbing.Reference) {
	if s.copies == nil {
		s.copies = map[plumbing.ReferenceName]*plumbing.Reference{}
	}
	s.copies[r.Name()] = r
}

// CheckAndSetReference implements storer.ReferenceStorer.
func (s *refCache) CheckAndSetReference(r, old *plumbing.Reference) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if copyOfRemote(r.Name()) {
		// As go-git's memory storage does: old, when given, must be
		// what the ref is, if it is.
		if old != nil {
			if cur, ok := s.copies[r.Name()]; ok && cur.Hash() != old.Hash() {
				return storage.ErrReferenceHasChanged
			}
		}
		s.setCopy(r)
		return nil
	}
	if err := s.Storage.CheckAndSetReference(r, old); err != nil {
		s.refs = nil
		return err
	}
	if s.refs != nil {
		s.refs[r.Name()] = r
	}
	return nil
}

// Reference implements storer.ReferenceStorer.
func (s *refCache) Reference(n plumbing.ReferenceName) (*plumbing.Reference, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if copyOfRemote(n) {
		if r, ok := s.copies[n]; ok {
			return r, nil
		}
		return nil, plumbing.ErrReferenceNotFound
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	if r, ok := s.refs[n]; ok {
		return r, nil
	}
	r, err := s.Storage.Reference(n)
	if err == nil {
		s.refs[n] = r
	}
	return r, err
}

// IterReferences implements storer.ReferenceStorer, in name order.
func (s *refCache) IterReferences() (storer.ReferenceIter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, err
	}
	all := make(map[plumbing.ReferenceName]*plumbing.Reference, len(s.refs)+len(s.copies))
	maps.Copy(all, s.refs)
	maps.Copy(all, s.copies)
	refs := make([]*plumbing.Reference, 0, len(all))
	for _, n := range slices.Sorted(maps.Keys(all)) {
		refs = append(refs, all[n])
	}
	return storer.NewReferenceSliceIter(refs), nil
}

// RemoveReference implements storer.ReferenceStorer.
func (s *refCache) RemoveReference(n plumbing.ReferenceName) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if copyOfRemote(n) {
		delete(s.copies, n)
		return nil
	}
	err := s.Storage.RemoveReference(n)
	if err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
		s.refs = nil
		return err
	}
	if s.refs != nil {
		delete(s.refs, n)
	}
	return err
}

// PackRefs implements storer.ReferenceStorer: the refs stay what they
// were, only their files change.
func (s *refCache) PackRefs() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Storage.PackRefs()
}
