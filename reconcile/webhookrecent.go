package reconcile

import (
	"crypto/sha256"
	"sync"
)

// recentSet remembers the last n keys added, in a ring.
type recentSet struct {
	mu   sync.Mutex
	keys map[[sha256.Size]byte]bool
	ring [][sha256.Size]byte
	next int
}

func newRecentSet(n int) *recentSet {
	return &recentSet{keys: make(map[[sha256.Size]byte]bool, n), ring: make([][sha256.Size]byte, 0, n)}
}

// add records keys and reports true, or reports false, recording
// nothing, when one of them is among the recent ones.
func (s *recentSet) add(keys ...string) bool {
	sums := make([][sha256.Size]byte, len(keys))
	for i, k := range keys {
		sums[i] = sha256.Sum256([]byte(k))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sum := range sums {
		if s.keys[sum] {
			return false
		}
	}
	for _, sum := range sums {
		if len(s.ring) < cap(s.ring) {
			s.ring = append(s.ring, sum)
		} else {
			delete(s.keys, s.ring[s.next])
			s.ring[s.next] = sum
			s.next = (s.next + 1) % cap(s.ring)
		}
		s.keys[sum] = true
	}
	return true
}
