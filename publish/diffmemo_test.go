package publish

import (
	"fmt"
	"testing"
)

// The memo's diff is unifiedDiff's, on a miss, on a hit, a pass later,
// and after the caller wrote into the bytes it handed in.
func TestDiffMemoIsUnifiedDiff(t *testing.T) {
	var m diffMemo
	cases := [][2]string{
		{"", "a: 1\n"},
		{"a: 1\n", "a: 2\n"},
		{"a: 1\nb: 2\n", "a: 1\nb: 3\nc: 4\n"},
		{"x\n", "x\n"},
	}
	for pass := range 3 {
		m.rotate()
		for i, c := range cases {
			before, after := []byte(c[0]), []byte(c[1])
			if got, want := m.diff(before, after), unifiedDiff(c[0], c[1]); got != want {
				t.Errorf("pass %d case %d: memo %q, unifiedDiff %q", pass, i, got, want)
			}
			if len(after) > 0 {
				after[0] = '#' // the memo keeps its own copy
			}
		}
	}
	// Entries unused for a whole pass are gone.
	m.rotate()
	m.rotate()
	if n := len(m.cur) + len(m.prev); n != 0 {
		t.Errorf("%d entries after two passes without use", n)
	}
}

func BenchmarkDiffMemoHit(b *testing.B) {
	var before, after []byte
	for i := range 400 {
		before = fmt.Appendf(before, "line %d: value\n", i)
		after = fmt.Appendf(after, "line %d: value%d\n", i, i%7)
	}
	var m diffMemo
	m.diff(before, after)
	for b.Loop() {
		m.diff(before, after)
	}
}
