// Package runtime is cairn's in-cluster side: what cannot wait for a pull
// request. Its parts live in sub-packages; instance is the manager that
// runs inside every database pod.
//
// The runtime may change only what the rendered manifests never set: pod
// role labels, its own status objects, Events. It imports planner/spec and
// small clients (client-go, the etcd client, pgx), never the planner,
// renderer or publisher.
package runtime
