// Package etcd is the etcd instance manager: the process that starts in
// every etcd pod (`cairn instance etcd`), decides how its member starts,
// and then runs etcd.
//
// A member with data starts from it; a member without data joins the
// running cluster (as a learner from etcd 3.4) and never bootstraps a
// second cluster; only the members of a create step, while the rendered
// config says bootstrap=new and no member answers, bootstrap together
// (manager.go), or restore the create step's snapshot (restore.go). A
// member whose data went stale (it was removed while down) has its data
// moved aside, never deleted, and joins again. A member that is still in
// the membership but lost its data is left to the runtime, which
// replaces it (remove, then re-add). A merged recovery is carried out
// once per member (recover.go). With TLS on (tls.go) the instance
// manager stays etcd's parent (supervise.go) and restarts it onto a
// changed CA bundle, one member at a time (ca.go, turn.go). A member
// whose log holds v2 requests the next minor cannot replay starts with
// --snapshot-count=1 (v2log.go).
//
// It owns etcd's keys of the rendered config (Config) beside the shared
// ones (instance.Config). It imports runtime/instance, planner/contract,
// runtime/backup and small clients; never runtime/instance/postgres (a
// kind's package does not import another kind's), the planner, renderer
// or publisher. cmd/cairn builds the manager from the pod's flags and
// environment.
//
// Decisions are functions of what the member finds (its data directory,
// the cluster's answers, the rendered config), so they are tested against
// real etcd processes on loopback.
package etcd
