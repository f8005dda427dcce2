// Package agent is the cairn runtime that runs in the cluster beside each
// database (the rendered <cluster>-runtime Deployment, `cairn runtime`).
// Replicas elect one leader on a Lease; only the leader acts.
//
// It changes only what the rendered manifests never set. This first part:
//   - PostgreSQL: keeps the role labels true, asking each member whether
//     it is in recovery and labelling the one primary cairn.dev/role=primary
//     and the others replica, so the <cluster>-rw and -ro Services route to
//     them;
//   - etcd: promotes learners once they have caught up, one at a time.
//
// Failover, switchover, planned member removal, dead-member replacement,
// status and backups build on it.
//
// Imports: client-go, pgx, the etcd client; never the planner, renderer or
// publisher.
package agent
