// Package postgres is the PostgreSQL instance manager: the process that
// starts in every PostgreSQL pod (`cairn instance postgres`), decides how
// its member starts, and then runs the server; and the other `cairn
// instance` programs of a PostgreSQL cluster: the pg_upgrade init
// container of a major upgrade (upgrade.go) and its pre-flight check
// (upgradecheck.go), and the WAL server behind archive_command and
// restore_command (walserver.go).
//
// manager.go decides how a member comes up, and each way has its own
// file: initdb.go (a new cluster), restore.go (a create step from a
// backup), clone.go (a member without data), follow.go (rewind a former
// primary, follow the primary), upgrade.go (member 0 to a new major, in
// its init container). server.go runs the server, run.go watches it (a
// server that crashes is restarted in place once, crash.go; a primary
// stopped cleanly records its shutdown checkpoint for the runtime,
// cleanstop.go), and
// watchdog.go is the fence a primary keeps on itself (lease.go, with the
// failsafe.go renewal and the runtime's nudges, nudge.go). A running
// replica checks it can catch up (catchup.go): WAL its primary removed is
// read from the cluster's archive (its restore_command, wal.go), and when
// neither holds it the replica is re-cloned (reclone.go); one that forked
// off the primary's timeline is rewound onto it. tls.go keeps
// the member's certificates and its connections' TLS.
//
// It owns PostgreSQL's keys of the rendered config (Config) beside the
// shared ones (instance.Config). It imports runtime/instance,
// planner/contract, runtime/backup, runtime/wal and small clients; never
// runtime/instance/etcd (a kind's package does not import another
// kind's), the planner, renderer or publisher. cmd/cairn builds the
// manager from the pod's flags and environment.
//
// Decisions are functions of what the member finds (its data directory,
// the cluster's answers, the rendered config), so they are tested against
// real PostgreSQL processes on loopback.
package postgres
