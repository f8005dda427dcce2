// Package runtime is cairn's in-cluster side: what cannot wait for a pull
// request. Its parts live in sub-packages: agent is the leader-elected
// runtime of one cluster (a keeper per kind, backups, status, Events,
// metrics), instance is the manager that runs inside every database pod,
// backup takes, lists and restores backups.
//
// The runtime may change only what the rendered manifests never set: pod
// role labels, its own status objects, Events. It imports planner/spec,
// planner/contract (the names and status documents it shares with the
// rendered manifests and the planner) and small shared clients
// (client-go, the etcd client, pgx, prometheus, the object store);
// never the renderer or the publisher.
package runtime
