package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const dur = 30 * time.Second

// held is a Lease of holder, first seen age ago.
func held(holder string, age time.Duration) Record {
	return Record{Holder: holder, Duration: dur, Seen: t0.Add(-age)}
}

func slot(holder string, age time.Duration, shards int) Record {
	r := held(holder, age)
	r.Map = ShardMap(shards)
	return r
}

// shardsOf is n shard Leases, all held by holder.
func shardsOf(holder string, n int) map[int]Record {
	out := map[int]Record{}
	for i := range n {
		out[i] = held(holder, 0)
	}
	return out
}

func view(shards int, slots, leases map[int]Record) View {
	return View{Identity: "a", Map: ShardMap(shards), Shards: shards, Slots: slots, Leases: leases, Margin: dur / 2, Now: t0}
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name string
		v    View
		// want are the fields checked; Own, Drain, Release and Acquire
		// as sets.
		slot                         int
		claim, agree                 bool
		target                       int
		own, drain, release, acquire []int
		live                         []string
	}{{
		name: "a new replica claims the lowest slot and takes no shard in that round",
		v:    view(4, nil, nil), slot: 0, claim: true, agree: true,
	}, {
		name: "slot 0 taken: the next one",
		v:    view(4, map[int]Record{0: slot("b", 0, 4)}, nil), slot: 1, claim: true, agree: true, live: []string{"b"},
	}, {
		name: "an expired slot is claimed",
		v:    view(4, map[int]Record{0: slot("b", dur, 4)}, nil), slot: 0, claim: true, agree: true,
	}, {
		name: "alone, it takes every shard",
		v:    view(4, map[int]Record{0: slot("a", 0, 4)}, nil), slot: 0, agree: true, target: 4,
		acquire: []int{0, 1, 2, 3}, live: []string{"a"},
	}, {
		name: "a second live replica: it keeps half and drains the rest",
		v:    view(4, map[int]Record{0: slot("a", 0, 4), 1: slot("b", 0, 4)}, shardsOf("a", 4)), slot: 0, agree: true, target: 2,
		own: []int{0, 1, 2, 3}, drain: []int{0, 1, 2, 3}, live: []string{"a", "b"},
	}, {
		name: "a shard held by another replica is not free, however old its renewTime",
		v:    view(2, map[int]Record{0: slot("a", 0, 2)}, map[int]Record{0: held("b", dur-time.Second), 1: held("b", 0)}), agree: true, target: 2,
		live: []string{"a"},
	}, {
		name: "a shard its holder let go unchanged for its duration is free",
		v:    view(2, map[int]Record{0: slot("a", 0, 2)}, map[int]Record{0: held("b", dur), 1: held("b", 0)}), agree: true, target: 2,
		acquire: []int{0}, live: []string{"a"},
	}, {
		name: "a released shard is free at once",
		v:    view(2, map[int]Record{0: slot("a", 0, 2)}, map[int]Record{0: held("", 0), 1: held("b", 0)}), agree: true, target: 2,
		acquire: []int{0}, live: []string{"a"},
	}, {
		name: "a replica whose slot expired is not counted",
		v:    view(4, map[int]Record{0: slot("a", 0, 4), 1: slot("b", dur, 4)}, shardsOf("a", 2)), agree: true, target: 4,
		own: []int{0, 1}, acquire: []int{2, 3}, live: []string{"a"},
	}, {
		name: "odd shares: the first replica by identity gets one more",
		v:    view(5, map[int]Record{0: slot("a", 0, 5), 1: slot("b", 0, 5)}, nil), agree: true, target: 3,
		acquire: []int{0, 1, 2, 3, 4}, live: []string{"a", "b"},
	}, {
		name: "a live replica with another shard map: it owns nothing and takes nothing",
		v:    view(4, map[int]Record{0: slot("a", 0, 4), 1: slot("b", 0, 8)}, shardsOf("a", 2)), agree: false,
		drain: []int{0, 1}, live: []string{"a", "b"},
	}, {
		name: "without a slot it owns none of the shards it still holds",
		v:    view(2, map[int]Record{0: slot("b", 0, 2)}, shardsOf("a", 2)), slot: 1, claim: true, agree: true,
		drain: []int{0, 1}, live: []string{"b"},
	}, {
		name: "a slot held twice: the lowest is kept",
		v:    view(2, map[int]Record{0: slot("a", 0, 2), 3: slot("a", 0, 2)}, nil), slot: 0, agree: true, target: 2,
		acquire: []int{0, 1}, live: []string{"a"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.v)
			if d.Slot != c.slot || d.Claim != c.claim || d.Agree != c.agree || d.Target != c.target {
				t.Errorf("slot %d claim %v agree %v target %d, want %d %v %v %d", d.Slot, d.Claim, d.Agree, d.Target, c.slot, c.claim, c.agree, c.target)
			}
			if !slices.Equal(d.Live, c.live) {
				t.Errorf("live %v, want %v", d.Live, c.live)
			}
			// Which half is kept is the replica's preference: check the
			// sizes, and the sets where nothing is left to choose.
			checkSet(t, "own", d.Own, c.own, c.target)
			checkSet(t, "drain", d.Drain, c.drain, len(c.drain)-max(0, len(c.own)-c.target))
			checkSet(t, "release", d.Release, c.release, len(c.release))
			checkSet(t, "acquire", d.Acquire, c.acquire, min(len(c.acquire), c.target-min(len(c.own), c.target)))
		})
	}
}

// checkSet checks that got is n elements of want.
func checkSet(t *testing.T, what string, got, want []int, n int) {
	t.Helper()
	n = max(0, min(n, len(want)))
	if len(got) != n {
		t.Errorf("%s %v: want %d of %v", what, got, n, want)
	}
	for _, s := range got {
		if !slices.Contains(want, s) {
			t.Errorf("%s %v: %d is not one of %v", what, got, s, want)
		}
	}
}

func TestDrainedShardsAreReleasedAfterTheMargin(t *testing.T) {
	slots := map[int]Record{0: slot("a", 0, 2), 1: slot("b", 0, 2)}
	v := view(2, slots, shardsOf("a", 2))
	d := Decide(v)
	if len(d.Own) != 1 || len(d.Drain) != 1 || len(d.Release) != 0 {
		t.Fatalf("first round: %+v", d)
	}
	gone := d.Drain[0]
	for _, c := range []struct {
		since   time.Duration
		release bool
	}{{0, false}, {v.Margin - time.Millisecond, false}, {v.Margin, true}, {2 * v.Margin, true}} {
		v.Draining = map[int]time.Time{gone: t0.Add(-c.since)}
		d := Decide(v)
		if got := slices.Equal(d.Release, []int{gone}); got != c.release {
			t.Errorf("drained for %s: release %v, drain %v", c.since, d.Release, d.Drain)
		}
	}
}

// The shares of any live set add up to every shard and differ by at
// most one.
func TestFairShares(t *testing.T) {
	for _, shards := range []int{1, 2, 7, 32, 1024} {
		for n := 1; n <= 70; n++ {
			var ids []string
			for i := range n {
				ids = append(ids, fmt.Sprintf("r%03d", i))
			}
			sum, lo, hi := 0, shards, 0
			for _, id := range ids {
				s := target(ids, id, shards)
				sum, lo, hi = sum+s, min(lo, s), max(hi, s)
			}
			if sum != shards || hi-lo > 1 {
				t.Errorf("%d shards over %d replicas: shares add up to %d, from %d to %d", shards, n, sum, lo, hi)
			}
		}
	}
}

// On random views, a decision only ever splits what the replica holds
// and adds free shards to it, within its share.
func TestDecideProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	holders := []string{"a", "b", "c", ""}
	for range 2000 {
		shards := 1 + r.IntN(12)
		v := view(shards, map[int]Record{}, map[int]Record{})
		v.Draining = map[int]time.Time{}
		for k := range 4 {
			if r.IntN(3) > 0 {
				m := shards
				if r.IntN(10) == 0 {
					m++
				}
				v.Slots[k] = slot(holders[r.IntN(len(holders))], time.Duration(r.IntN(40))*time.Second, m)
			}
		}
		for i := range shards {
			if r.IntN(4) > 0 {
				v.Leases[i] = held(holders[r.IntN(len(holders))], time.Duration(r.IntN(40))*time.Second)
				if v.Leases[i].Holder == "a" && r.IntN(2) == 0 {
					v.Draining[i] = t0.Add(-time.Duration(r.IntN(30)) * time.Second)
				}
			}
		}
		d := Decide(v)
		mine := heldBy(v.Leases, "a")
		split := slices.Concat(d.Own, d.Drain, d.Release)
		slices.Sort(split)
		if !slices.Equal(split, mine) {
			t.Fatalf("%+v: own+drain+release %v, want what it holds, %v", v, split, mine)
		}
		for _, s := range d.Acquire {
			l, ok := v.Leases[s]
			if slices.Contains(mine, s) || ok && !l.free("a", v.Now) {
				t.Fatalf("%+v: acquires %d, which is not free", v, s)
			}
		}
		if len(d.Own)+len(d.Acquire) > d.Target {
			t.Fatalf("%+v: owns %v and acquires %v, over its share %d", v, d.Own, d.Acquire, d.Target)
		}
		if (d.Claim || d.Slot < 0 || !d.Agree) && len(d.Own)+len(d.Acquire) > 0 {
			t.Fatalf("%+v: without a slot or agreement, owns %v and acquires %v", v, d.Own, d.Acquire)
		}
		for _, s := range d.Release {
			if since, ok := v.Draining[s]; !ok || v.Now.Sub(since) < v.Margin {
				t.Fatalf("%+v: releases %d before it drained for the margin", v, s)
			}
		}
	}
}

func TestShardOfIsStableAndSpread(t *testing.T) {
	// Pinned: replicas of two cairn versions map alike unless ShardMap
	// names another map.
	for _, c := range []struct {
		ref  plan.ClusterRef
		want int
	}{
		{refOf("EtcdCluster", "gitops", "kv"), 20},
		{refOf("PostgresCluster", "", "my-production-db"), 9},
		{refOf("EtcdCluster", "", "my-etcd-cluster"), 23},
	} {
		if got := ShardOf(c.ref, 32); got != c.want {
			t.Errorf("%s/%s/%s is in shard %d of 32, want %d: the map changed, so must ShardMap (%s)", c.ref.Kind, c.ref.Namespace, c.ref.Name, got, c.want, ShardMap(32))
		}
	}
	counts := make([]int, 8)
	for i := range 8000 {
		counts[ShardOf(refOf("PostgresCluster", "", fmt.Sprintf("db-%d", i)), 8)]++
	}
	for s, n := range counts {
		if n < 800 || n > 1200 {
			t.Errorf("shard %d has %d of 8000 clusters: the hash spreads poorly", s, n)
		}
	}
	if ShardOf(refOf("EtcdCluster", "", "kv"), 1) != 0 {
		t.Error("one shard: not shard 0")
	}
}

func TestLeaseNames(t *testing.T) {
	for _, c := range []struct {
		name   string
		family string
		n      int
		ok     bool
	}{
		{"cairn-shard-0", shardPrefix, 0, true}, {"cairn-shard-31", shardPrefix, 31, true}, {"cairn-replica-5", slotPrefix, 5, true},
		{"cairn-shard-01", "", 0, false}, {"cairn-shard--1", "", 0, false}, {"cairn-shard-x", "", 0, false}, {"cairn-trigger", "", 0, false},
	} {
		f, n, ok := leaseIndex(c.name)
		if f != c.family || n != c.n || ok != c.ok {
			t.Errorf("%s: %q %d %v, want %q %d %v", c.name, f, n, ok, c.family, c.n, c.ok)
		}
	}
}
