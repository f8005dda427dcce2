// Package shard splits the clusters of a fleet among the replicas of
// cairn reconcile, so that two replicas never publish the same cluster,
// even while shards move. It feeds reconcile.Config.Owns.
//
// A cluster belongs to one of a fixed number of shards (ShardOf: a stable
// hash of kind/namespace/name). Each shard is a coordination.k8s.io/v1
// Lease, cairn-shard-<i>, held by at most one replica at a time; each
// live replica holds a replica slot Lease, cairn-replica-<k>, so that all
// know how many are live and take only a fair share (Decide: shares
// differ by at most one and add up to every shard). A replica over its
// share stops publishing the shards it gives up at once and releases them
// half a lease duration later; a replica that dies leaves its Leases to
// expire. docs/sharding.md tells the whole design.
//
// # The guarantee and what it assumes
//
// Every write of a Lease is a compare-and-swap on its resourceVersion, so
// a shard has one holder at a time. Holding is not enough, since a
// replica cut off from the API server still believes it holds; so, as
// client-go's leaderelection does, time is judged only by each replica's
// own clock, never by the renewTime another wrote:
//
//   - A replica takes over a held shard only when it has watched the
//     Lease stay at one resourceVersion for the Lease's whole duration D,
//     from when it first listed that version.
//   - The holder publishes a shard's clusters (Owns) only while its last
//     successful renewal was sent less than D - M ago, M = D/2, and while
//     its replica slot is as fresh. The renewal was applied after it was
//     sent, and seen by the taker after it was applied.
//
// So the holder stops at least M before a taker starts, provided (1) the
// replicas' clocks run at nearly the same rate — skew is harmless, as no
// two clocks are compared; with no write in flight a clock could run up
// to D/(D-M) = twice as fast as another, and real clocks drift by far
// less — and (2) a write that began while Owns said yes ends within that
// margin: cairn checks Owns before each cluster's writes and before each
// merge, so one cluster's writes must take less than M (15 s at the
// default D of 30 s). A write that waits
// out a GitHub rate limit after its check can break (2); the publisher's
// own rules (it updates only heads it proves are its own, adopts an open
// pull request rather than open a second) are the second line then.
//
// Replicas that map clusters to shards differently (another --shards, or
// a cairn with another hash) would each own a cluster under a different
// shard: each replica writes its map on its slot (AnnotationMap), and one
// that sees a live replica with another map owns nothing until it is gone.
//
// A replica's Leases are held under ID_<random>: a process restarted
// under the same pod name is another holder, and waits like any other.
//
// # Bounds
//
// A round lists at most MaxShards + MaxReplicas + 1 Leases, in one page,
// by label (LabelLease); every call has a timeout; Leases are never
// deleted, and their number is bounded by the shard count and the slots
// in use at once.
//
// Imports: planner/plan (ClusterRef), planner/contract (the Leases'
// labels) and client-go. It must not import
// the loop, the publisher, the planner, the runtime or the test beds.
package shard
