// Package agent is the cairn runtime that runs in the cluster beside each
// database (the rendered <cluster>-runtime Deployment, `cairn runtime`).
// Replicas elect one leader on a Lease; only the leader acts.
//
// It changes only what the rendered manifests never set:
//   - PostgreSQL: keeps the role labels true, asking each member whether
//     it is in recovery and labelling the one primary cairn.dev/role=primary
//     and the others replica, so the <cluster>-rw and -ro Services route to
//     them;
//   - etcd (Membership): one membership change per pass, decided by a pure
//     function of what the pass saw (decide): promote a caught-up learner,
//     carry out a merged EtcdRemoveMember step (moving leadership away
//     first), replace a member whose volume claim was replaced (remove it;
//     its instance manager re-adds it as a learner); nothing without
//     quorum. It reports the membership in <cluster>-cairn-status for the
//     planner, records Events on the StatefulSet and keeps the
//     cairn_etcd_* metrics (docs/runtime.md).
//
// Failover, switchover and backups build on it.
//
// Imports: client-go, pgx, the etcd client, prometheus, and the status
// type of planner/observe (the contract both sides read); never the
// planner's logic, the renderer or the publisher.
package agent
