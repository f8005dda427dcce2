package shard

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Record is one Lease as this replica last listed it.
type Record struct {
	// Holder is the holderIdentity; "" when released.
	Holder string
	// Duration is how long the holder may go without renewing it
	// (leaseDurationSeconds).
	Duration time.Duration
	// Map is, on a replica slot, the shard map its holder publishes with
	// (AnnotationMap).
	Map string
	// Seen is when this replica first listed the Lease at its current
	// resourceVersion, by its own clock. Expiry is judged from it, never
	// from the renewTime another replica's clock wrote.
	Seen time.Time
}

// free says whether identity may take the Lease at now: nobody holds it,
// or its holder, another replica, has let it go unchanged for its
// duration as this replica has watched it.
func (r Record) free(identity string, now time.Time) bool {
	return r.Holder == "" || r.Holder != identity && r.expired(now)
}

func (r Record) expired(now time.Time) bool { return !now.Before(r.Seen.Add(r.Duration)) }

// View is what one replica knows at the start of a round: the Leases it
// listed and what it is giving up.
type View struct {
	// Identity is the holderIdentity this replica writes.
	Identity string
	// Map is the shard map this replica publishes with (ShardMap(Shards)).
	Map    string
	Shards int
	// Slots are the replica slot Leases by number, Leases the shard
	// Leases by number; a Lease not created has no entry.
	Slots, Leases map[int]Record
	// Draining are the shards this replica has stopped owning and holds
	// until Margin has passed, by when it stopped.
	Draining map[int]time.Time
	// Margin is how long a shard drains before it is released.
	Margin time.Duration
	Now    time.Time
}

// Decision is what a replica does in a round. Own, Drain, Release and
// Acquire are shard numbers, each in the order the replica prefers them.
type Decision struct {
	// Slot is the replica slot this replica holds, or claims when Claim;
	// -1 when it holds none and none is free.
	Slot  int
	Claim bool
	// ExtraSlots are other slots it holds (a slot claimed twice): released.
	ExtraSlots []int
	// Live are the holders of live replica slots, sorted; this replica
	// among them once it holds its slot.
	Live []string
	// Agree: every live replica publishes this replica's shard map.
	Agree bool
	// Target is this replica's fair share of the shards.
	Target int
	// Own are the shards to renew and publish; Drain those to renew but
	// no longer publish; Release those drained for Margin, to give up;
	// Acquire the free shards to take.
	Own, Drain, Release, Acquire []int
}

// Decide is a replica's round, as a function of what it observed.
//
// A replica first holds a replica slot (the lowest free one); only in a
// later round, once its slot is visible to every replica that lists, does
// it take shards. The live replicas, sorted by identity, split the shards
// into fair shares: with n of them, each gets shards/n and the first
// shards%n one more, so shares differ by at most one and add up to every
// shard. A replica over its share drains the shards it prefers least —
// it stops publishing them at once — and releases them once Margin has
// passed, so that a write it began before has ended when another replica
// takes over; a replica under its share takes free shards, those it
// prefers most first. A replica without a slot, or that sees a live
// replica publish another shard map, owns nothing.
//
// Decide never gives a replica a shard another holds: a shard is free
// only when released or when its holder let it go unchanged for its
// duration (Record.free). That two replicas never hold one shard at once
// is the Leases' compare-and-swap (resourceVersion), not Decide's.
func Decide(v View) Decision {
	d := Decision{Slot: -1}
	mine := heldBy(v.Slots, v.Identity)
	if len(mine) > 0 {
		d.Slot, d.ExtraSlots = mine[0], mine[1:]
	} else if k := lowestFree(v); k >= 0 {
		d.Slot, d.Claim = k, true
	}
	member := len(mine) > 0
	d.Live, d.Agree = live(v)
	held := heldBy(v.Leases, v.Identity)
	byPreference(held, v.Identity)
	if !member || !d.Agree {
		d.Drain, d.Release = drainOrRelease(held, v)
		return d
	}
	d.Target = target(d.Live, v.Identity, v.Shards)
	keep := min(len(held), d.Target)
	d.Own = held[:keep]
	d.Drain, d.Release = drainOrRelease(held[keep:], v)
	if want := d.Target - len(held); want > 0 {
		var free []int
		for i := range v.Shards {
			r, ok := v.Leases[i]
			if !ok || r.Holder != v.Identity && r.free(v.Identity, v.Now) {
				free = append(free, i)
			}
		}
		byPreference(free, v.Identity)
		d.Acquire = free[:min(want, len(free))]
	}
	return d
}

// heldBy is the numbers of the Leases identity holds, ascending.
func heldBy(leases map[int]Record, identity string) []int {
	var out []int
	for _, i := range slices.Sorted(maps.Keys(leases)) {
		if leases[i].Holder == identity {
			out = append(out, i)
		}
	}
	return out
}

// lowestFree is the lowest replica slot free to claim, -1 when none is.
func lowestFree(v View) int {
	for k := range MaxReplicas {
		if r, ok := v.Slots[k]; !ok || r.free(v.Identity, v.Now) {
			return k
		}
	}
	return -1
}

// live is the holders of the replica slots not expired (this replica's
// own always counts), sorted, and whether all publish v.Map.
func live(v View) ([]string, bool) {
	byHolder := map[string]string{}
	for _, r := range v.Slots {
		if r.Holder != "" && (r.Holder == v.Identity || !r.expired(v.Now)) {
			byHolder[r.Holder] = r.Map
		}
	}
	agree := true
	for _, m := range byHolder {
		agree = agree && m == v.Map
	}
	return slices.Sorted(maps.Keys(byHolder)), agree
}

// target is identity's fair share: shards/n, and one more for the first
// shards%n replicas of live.
func target(live []string, identity string, shards int) int {
	n := len(live)
	rank, found := slices.BinarySearch(live, identity)
	if n == 0 || !found {
		return 0
	}
	t := shards / n
	if rank < shards%n {
		t++
	}
	return t
}

// drainOrRelease splits shards this replica gives up: those drained for
// Margin are released, the others drain.
func drainOrRelease(shards []int, v View) (drain, release []int) {
	for _, s := range shards {
		if since, ok := v.Draining[s]; ok && !v.Now.Before(since.Add(v.Margin)) {
			release = append(release, s)
		} else {
			drain = append(drain, s)
		}
	}
	return drain, release
}

// byPreference sorts shards by how much identity prefers them, most
// first.
func byPreference(shards []int, identity string) {
	slices.SortFunc(shards, func(a, b int) int {
		return cmp.Compare(preference(identity, b), preference(identity, a))
	})
}
