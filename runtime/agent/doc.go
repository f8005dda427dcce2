// Package agent is the cairn runtime that runs in the cluster beside each
// database (the rendered <cluster>-runtime Deployment, `cairn runtime`).
// Replicas elect one leader on a Lease; only the leader acts.
//
// The agent itself knows no kind of database: while it leads it calls the
// Keeper of the cluster's kind every Interval and takes backups from the
// member the keeper's BackupSource picks. Each kind's keeper lives in
// files of its own, is built by its KeeperFactory (Etcd, Postgres; cmd/cairn's
// table of kinds names them) and registers its own metrics only. The
// keepers change only what the rendered manifests never set:
//   - PostgreSQL (Roles; pg*.go, roles.go): probes every member each pass
//     and decides with a pure function (decidePostgres): keep the role
//     labels true (the one primary cairn.dev/role=primary, the others
//     replica, so the <cluster>-rw and -ro Services route to them) and
//     synchronous_standby_names; fail over from a primary that is down
//     (recorded in <cluster>-cairn-status first, fenced, the replica with
//     the most WAL promoted); carry out a merged switchover step. Events
//     and cairn_postgres_* metrics (docs/runtime.md);
//   - etcd (Membership; etcdkeeper.go, membership.go, decide.go, act.go,
//     etcdlook.go, status.go, events.go, metrics.go): one membership
//     change per pass, decided by a pure function of what the pass saw
//     (decide): promote a caught-up learner, carry out a merged
//     EtcdRemoveMember step (moving leadership away first), replace a
//     member whose volume claim was replaced (remove it; its instance
//     manager re-adds it as a learner); nothing without quorum. It reports
//     the membership in <cluster>-cairn-status for the planner, records
//     Events on the StatefulSet and keeps the cairn_etcd_* metrics
//     (docs/runtime.md).
//
// Scheduled and requested backups, of every kind, with the cairn_backup_*
// metrics: see backups.go. What every replica exports whatever its kind
// (cairn_runtime_leader, cairn_build_info) and how the kinds' gauges exist
// only on the leader once it has observed: leadermetrics.go
// (docs/metrics.md).
//
// Imports: client-go, pgx, the etcd client, prometheus, runtime/backup,
// planner/spec (the kinds' names) and planner/contract (the names and
// status documents the manifests, the planner and the runtime share);
// never the planner's logic, the renderer or the publisher.
package agent
