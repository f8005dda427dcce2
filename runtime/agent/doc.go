// Package agent is the cairn runtime that runs in the cluster beside each
// database (the rendered <cluster>-runtime Deployment, `cairn runtime`).
// Replicas elect one leader on a Lease; only the leader acts.
//
// The agent itself knows no kind of database: while it leads it calls the
// Keeper of the cluster's kind every Interval and takes backups from the
// member the keeper's BackupSource picks. Each kind's keeper lives in a
// package of its own, is built by its KeeperFactory from the kind's own
// config (runtime/agent/etcd, runtime/agent/postgres; cmd/cairn's table
// of kinds names them) and registers its own metrics only. What the
// kinds share lives here: the leader election and Config (agent.go), the
// Keeper and Observer contracts (keeper.go), the member pods a keeper may
// trust (members.go, backupsource.go), the one Event writer (events.go)
// and the metrics helpers (metrics.go).
//
// Scheduled and requested backups, of every kind, with the cairn_backup_*
// metrics: see backups.go. What every replica exports whatever its kind
// (cairn_runtime_leader, cairn_build_info) and how the kinds' gauges exist
// only on the leader once it has observed: leadermetrics.go
// (docs/metrics.md).
//
// Imports: client-go, prometheus, robfig/cron, runtime/backup and
// planner/contract (the names and status documents the manifests, the
// planner and the runtime share); never its kinds' packages (they import
// it), the planner's logic, the renderer or the publisher.
package agent
