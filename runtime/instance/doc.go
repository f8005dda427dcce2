// Package instance is the instance manager: the process that starts in
// every database pod (`cairn instance etcd|postgres`), decides how its
// member starts, and then runs the database.
//
// etcd: a member with data starts from it; a member without data joins the
// running cluster (as a learner from etcd 3.4) and never bootstraps a
// second cluster; only the members of a create step, while the rendered
// config says bootstrap=new and no member answers, bootstrap together. A
// member whose data went stale (it was removed while down) has its data
// moved aside, never deleted, and joins again. A member that is still in
// the membership but lost its data is left to the runtime, which replaces
// it (remove, then re-add). With TLS on the instance manager stays
// etcd's parent (etcdsup.go) and restarts it onto a changed CA bundle,
// one member at a time (etcdca.go, etcdturn.go).
//
// PostgreSQL: postgres.go decides how a member comes up, and each way has
// its own file: pginitdb.go (a new cluster), restore.go (a create step
// from a backup), pgclone.go (a member without data), pgfollow.go
// (rewind a former primary, follow the primary), pgupgrade.go (member 0
// to a new major, in its init container). server.go runs the server and
// watchdog.go is the fence a primary keeps on itself. A running replica
// checks it can catch up (pgcatchup.go): WAL its primary removed is read
// from the cluster's archive (its restore_command, pgwal.go), and when
// neither holds it the replica is re-cloned (pgreclone.go).
//
// The names it shares with the rendered manifests (ConfigMap keys, role
// label values, member names) come from planner/contract. It imports
// contract, runtime/backup and small clients, never the planner,
// renderer or publisher; cmd/cairn builds each kind's manager from the
// pod's flags and environment.
//
// Decisions are functions of what the member finds (its data directory,
// the cluster's answers, the rendered config), so they are tested against
// real etcd and PostgreSQL processes on loopback.
package instance
