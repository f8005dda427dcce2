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
// it (remove, then re-add).
//
// PostgreSQL: see postgres.go.
//
// Decisions are functions of what the member finds (its data directory,
// the cluster's answers, the rendered config), so they are tested against
// real etcd and PostgreSQL processes on loopback.
package instance
