package gitrepo

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
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
// Embedding the filesystem storage keeps every other interface go-git
// looks for on it (packfile writing, the object store, the config).
type refCache struct {
	*filesystem.Storage

	mu   sync.Mutex
	refs map[plumbing.ReferenceName]*plumbing.Reference // nil: not loaded
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
	if err := s.Storage.SetReference(r); err != nil {
		s.refs = nil
		return err
	}
	if s.refs != nil {
		s.refs[r.Name()] = r
	}
	return nil
}

// CheckAndSetReference implements storer.ReferenceStorer.
func (s *refCache) CheckAndSetReference(r, old *plumbing.Reference) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	refs := make([]*plumbing.Reference, 0, len(s.refs))
	for _, n := range slices.Sorted(maps.Keys(s.refs)) {
		refs = append(refs, s.refs[n])
	}
	return storer.NewReferenceSliceIter(refs), nil
}

// RemoveReference implements storer.ReferenceStorer.
func (s *refCache) RemoveReference(n plumbing.ReferenceName) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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
