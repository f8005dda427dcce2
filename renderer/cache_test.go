package renderer

import (
	"bytes"
	"maps"
	"testing"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// cacheFixture is n clusters of the bench fleet, their plans, and a
// renderer without a cache.
func cacheFixture(t *testing.T, n int) ([]spec.Cluster, plan.List, *Renderer) {
	t.Helper()
	desired, observed := benchFleet(t, n)
	plans := planner.New(planner.Etcd(), planner.Postgres()).Plan(desired, observed, nil)
	r, err := New(Options{}, Etcd(), Postgres())
	if err != nil {
		t.Fatal(err)
	}
	return desired, plans, r
}

// What the cache answers is byte for byte what a renderer without one
// renders, for the first and last steps of every plan of a mixed fleet,
// on a miss and on a hit.
func TestCacheIsTheRendererByteForByte(t *testing.T) {
	desired, plans, r := cacheFixture(t, 6)
	c := NewCache(r, 0)
	renders := 0
	for round := range 2 {
		for i, cl := range desired {
			p := plans.Plans[i]
			for _, s := range []plan.Step{p.Steps[0], p.Steps[len(p.Steps)-1]} {
				want, wantBuilt, err := r.Render(cl, p, s.ID)
				if err != nil {
					t.Fatal(err)
				}
				got, gotBuilt, err := c.Render(cl, p, s.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !maps.EqualFunc(got, want, bytes.Equal) || !bytes.Equal(gotBuilt.Base, wantBuilt.Base) || !bytes.Equal(gotBuilt.Selected, wantBuilt.Selected) {
					t.Fatalf("round %d: %s step %s: the cache's tree differs from the renderer's", round, p.Cluster, s.ID)
				}
				if round == 0 {
					renders++
				}
			}
		}
	}
	if st := c.Stats(); st.Misses != renders || st.Hits != renders || st.Rebuilt != 0 {
		t.Errorf("stats %+v, want %d misses then %d hits", st, renders, renders)
	}
}

// Another plan, another step or another spec is another entry.
func TestCacheKeysEveryInput(t *testing.T) {
	desired, plans, r := cacheFixture(t, 2)
	c := NewCache(r, 0)
	etcd := plans.Plans[0]
	if len(etcd.Steps) < 2 {
		t.Fatalf("the etcd plan has %d steps, want 2 or more", len(etcd.Steps))
	}
	renderOK := func(what string, p int, step string, wantMisses int) {
		t.Helper()
		if _, _, err := c.Render(desired[p], plans.Plans[p], step); err != nil {
			t.Fatal(err)
		}
		if st := c.Stats(); st.Misses != wantMisses {
			t.Errorf("%s: %d misses, want %d", what, st.Misses, wantMisses)
		}
	}
	renderOK("first", 0, etcd.Steps[0].ID, 1)
	renderOK("again", 0, etcd.Steps[0].ID, 1)
	renderOK("another step", 0, etcd.Steps[1].ID, 2)
	renderOK("another cluster", 1, plans.Plans[1].Steps[0].ID, 3)
	plans.Plans[0].Steps[0].Summary += " (edited)"
	renderOK("an edited plan", 0, etcd.Steps[0].ID, 4)
}

// An entry whose bytes changed after it was stored (a caller wrote into a
// build it was handed) fails its checksum and is rendered again.
func TestCacheRebuildsACorruptedEntry(t *testing.T) {
	desired, plans, r := cacheFixture(t, 1)
	c := NewCache(r, 0)
	p := plans.Plans[0]
	tree, built, err := c.Render(desired[0], p, p.Steps[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(built.Selected)
	built.Selected[0] ^= 0xff
	for path := range tree {
		tree[path] = nil // the map handed out is a copy
	}
	tree2, built2, err := c.Render(desired[0], p, p.Steps[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Rebuilt != 1 || st.Hits != 0 {
		t.Fatalf("stats %+v, want the corrupted entry rebuilt", st)
	}
	if !bytes.Equal(built2.Selected, want) {
		t.Error("the rebuilt entry differs from the first render")
	}
	for path, data := range tree2 {
		if len(data) == 0 {
			t.Errorf("%s is empty after the rebuild", path)
		}
	}
}

// Entries live two generations: the cache never holds more than twice
// its limit, and what a pass used stays for the next one.
func TestCacheIsBounded(t *testing.T) {
	desired, plans, r := cacheFixture(t, 6)
	c := NewCache(r, 2)
	for round := range 3 {
		for i, cl := range desired {
			if _, _, err := c.Render(cl, plans.Plans[i], plans.Plans[i].Steps[0].ID); err != nil {
				t.Fatal(err)
			}
			if n := len(c.cur) + len(c.prev); n > 4 {
				t.Fatalf("round %d: %d entries, over twice the limit", round, n)
			}
		}
	}
	// Two clusters rendered over and over fit: only hits after the first.
	c = NewCache(r, 2)
	for range 5 {
		for i := range 2 {
			if _, _, err := c.Render(desired[i], plans.Plans[i], plans.Plans[i].Steps[0].ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st := c.Stats(); st.Misses != 2 {
		t.Errorf("stats %+v, want 2 misses", st)
	}
}

// A loop starts a generation with each pass: what a pass used is kept
// for the next, whatever the fleet's size below the limit; what a whole
// pass did not use is dropped.
func TestCacheGenerationsFollowPasses(t *testing.T) {
	desired, plans, r := cacheFixture(t, 3)
	c := NewCache(r, 0)
	render := func(i int) {
		t.Helper()
		if _, _, err := c.Render(desired[i], plans.Plans[i], plans.Plans[i].Steps[0].ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, pass := range [][]int{{0, 1, 2}, {0, 1}, {0, 1}, {0, 1, 2}} {
		c.NewPass()
		for _, i := range pass {
			render(i)
		}
	}
	// Misses: the three of the first pass, then cluster 2 again in the
	// last, two passes after it was last used.
	if st := c.Stats(); st.Misses != 4 || st.Hits != 6 {
		t.Errorf("stats %+v, want 4 misses and 6 hits", st)
	}
}
