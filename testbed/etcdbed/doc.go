// Package etcdbed backs the etcd pods of a test bed with real etcd
// members: for each pod the node stand-in starts, it runs the instance
// manager's decision (bootstrap, join as a learner, restart from data,
// wait while removed) with the pod's rendered <cluster>-cairn ConfigMap,
// and then the etcd binary, on the pod's own 127.x.y.z address with etcd's
// usual ports (with TLS on, under the instance manager's supervisor, as
// runtime/instance/etcd.Run runs it). A member's data directory is keyed by its
// claim's UID, so a replaced claim is an empty data directory, as in a
// cluster.
//
// It is for tests only.
package etcdbed
