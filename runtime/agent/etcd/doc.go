// Package etcd is the runtime's keeper of etcd clusters (Membership, built
// by Config.Keeper, an agent.KeeperFactory): what cannot wait for a pull
// request while the agent leads.
//
// One membership change per pass, decided by a pure function of what the
// pass saw (decide.go; look.go looks, act.go acts): promote a caught-up
// learner, carry out a merged EtcdRemoveMember step (moving leadership
// away first), replace a member whose volume claim was replaced (remove
// it; its instance manager re-adds it as a learner), move leadership off
// a leader whose node is cordoned (drain.go; nodes.go reads the nodes);
// nothing without quorum. Beside it: space maintenance (compaction, defragmentation,
// NOSPACE alarms: maint*.go), a merged downgrade (downgrade.go), recovery
// of a member that cannot start (recover.go) and TLS between clients and
// members (tls.go). It reports the membership in <cluster>-cairn-status
// for the planner (status.go), records Events on the StatefulSet
// (events.go) and keeps the cairn_etcd_* metrics (metrics.go,
// maintmetrics.go; docs/runtime.md, docs/metrics.md).
//
// Imports: runtime/agent (the Keeper contract, the member pods, Events),
// the etcd client, client-go, prometheus, runtime/backup, runtime/certs,
// planner/spec and planner/contract; never runtime/agent/postgres, the
// planner's logic, the renderer or the publisher.
package etcd
