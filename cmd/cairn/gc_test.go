package main

import "testing"

// The limit is the floor for a small live heap and twice the live heap
// past half the floor, so the collector never chases a fixed limit.
func TestMemoryLimitFollowsTheLiveHeap(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, memoryFloor},
		{50 << 20, memoryFloor},
		{memoryFloor / 2, memoryFloor},
		{300 << 20, 600 << 20},
		{8 << 30, 16 << 30},
		{1 << 63, 1 << 62},
	} {
		if got := memoryLimit(c.live); got != c.want {
			t.Errorf("memoryLimit(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}
