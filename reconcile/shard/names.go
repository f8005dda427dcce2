package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
)

// The Leases of a fleet, all in one namespace, all labelled LabelLease:
//
//	cairn-shard-<i>    shard i (0 <= i < shards): its holder publishes the shard's clusters
//	cairn-replica-<k>  replica slot k (0 <= k < MaxReplicas): its holder is a live replica
//	cairn-trigger      bumped by Notify: every replica passes again (a webhook reached one)
const (
	shardPrefix = "cairn-shard-"
	slotPrefix  = "cairn-replica-"
	triggerName = "cairn-trigger"

	// LabelLease marks cairn's sharding Leases (value: shard, replica or
	// trigger); a replica lists only them.
	LabelLease = contract.LabelLease
	// AnnotationMap, on a replica slot, is the shard map its holder
	// publishes with (ShardMap): replicas that disagree on it own nothing.
	AnnotationMap = contract.AnnotationShardMap
)

// The bounds of a fleet. A replica lists at most MaxShards + MaxReplicas
// + 1 Leases, in one page.
const (
	MaxShards   = 1024
	MaxReplicas = 64
)

func shardLease(i int) string { return shardPrefix + strconv.Itoa(i) }
func slotLease(k int) string  { return slotPrefix + strconv.Itoa(k) }

// leaseIndex parses a Lease name: its family (shardPrefix or slotPrefix)
// and number; ok is false for any other name.
func leaseIndex(name string) (family string, i int, ok bool) {
	for _, f := range []string{shardPrefix, slotPrefix} {
		rest, found := strings.CutPrefix(name, f)
		if !found {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || strconv.Itoa(n) != rest {
			return "", 0, false
		}
		return f, n, true
	}
	return "", 0, false
}

// ShardOf is the shard of a cluster among shards: FNV-1a (64 bits) of
// kind/namespace/name, modulo shards. The API version is left out, so a
// kind's new version keeps its clusters where they are. Every replica must
// map with the same function and count: ShardMap names both, and replicas
// that publish different maps own nothing (see Decide).
func ShardOf(ref plan.ClusterRef, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(ref.Kind + "/" + ref.Namespace + "/" + ref.Name))
	return int(h.Sum64() % uint64(shards))
}

// ShardMap names the map ShardOf makes with shards, as a replica
// publishes it on its slot (AnnotationMap).
func ShardMap(shards int) string { return fmt.Sprintf("fnv1a-64/%d", shards) }

// preference is how much a replica prefers a shard: each replica ranks
// the shards in its own order, so replicas that take free shards at the
// same time seldom reach for the same one, and it keeps those it ranks
// highest when it gives some up.
func preference(identity string, shard int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(identity + "#" + strconv.Itoa(shard)))
	return h.Sum64()
}
