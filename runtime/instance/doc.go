// Package instance holds what the instance managers of both kinds share:
// the process that starts in every database pod (`cairn instance ...`),
// decides how its member starts, and then runs the database. Each kind's
// manager is a package of its own: runtime/instance/etcd and
// runtime/instance/postgres.
//
// Shared here: the keys of the rendered <cluster>-cairn ConfigMap both
// kinds read (config.go; a kind's package reads its own keys beside them
// with ConfigKeys), the environment of the programs a manager starts,
// without the pod's secrets (environ.go), the wait while a member cannot
// start yet (wait.go), keeping stale data aside instead of deleting it
// (datadir.go), finding the backup a create step restores (backup.go),
// and `cairn instance install` (install.go).
//
// The names it shares with the rendered manifests (ConfigMap keys, role
// label values, member names) come from planner/contract. It imports
// contract, runtime/backup and small clients, never a kind's package
// (runtime/instance/etcd, runtime/instance/postgres, which import it),
// the planner, renderer or publisher; cmd/cairn builds each kind's
// manager from the pod's flags and environment.
package instance
