package publish

import (
	"bytes"
	"hash/maphash"
	"sync"
)

// diffMemo remembers the unified diffs of a Publisher's steps across
// passes: a step whose built manifests are the same bytes as in a pass
// before gets the diff computed then, for the price of comparing them.
// Entries are found by a hash of both inputs and kept only when both
// compare equal, byte for byte, so a collision costs a diff, never a wrong
// one. Entries not used for a pass are dropped (generations swapped at
// each Publish): memory follows the fleet's open steps.
type diffMemo struct {
	mu        sync.Mutex
	cur, prev map[uint64][]diffEntry
}

var diffSeed = maphash.MakeSeed()

type diffEntry struct {
	before, after []byte
	diff          string
}

// diff is unifiedDiff(before, after), from the memo when it has it.
func (m *diffMemo) diff(before, after []byte) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		m.cur = map[uint64][]diffEntry{}
	}
	var h maphash.Hash
	h.SetSeed(diffSeed)
	h.Write(before)
	h.WriteByte(0)
	h.Write(after)
	key := h.Sum64()
	if d, ok := find(m.cur[key], before, after); ok {
		return d
	}
	if d, ok := find(m.prev[key], before, after); ok {
		m.cur[key] = append(m.cur[key], diffEntry{before: bytes.Clone(before), after: bytes.Clone(after), diff: d})
		return d
	}
	d := unifiedDiff(string(before), string(after))
	// Copies: what the memo compares with is never a caller's to change.
	m.cur[key] = append(m.cur[key], diffEntry{before: bytes.Clone(before), after: bytes.Clone(after), diff: d})
	return d
}

func find(entries []diffEntry, before, after []byte) (string, bool) {
	for _, e := range entries {
		if bytes.Equal(e.before, before) && bytes.Equal(e.after, after) {
			return e.diff, true
		}
	}
	return "", false
}

// rotate starts a pass: what the pass before used stays one more.
func (m *diffMemo) rotate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prev, m.cur = m.cur, map[uint64][]diffEntry{}
}
