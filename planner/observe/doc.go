// Package observe reads what runs from a Kubernetes cluster through
// client-go and fills the planner's observed state (planner/live): per
// cluster its StatefulSet (replicas, update partition, template version,
// volume claim size), its pods (ready, version, role), the smallest volume
// capacity, the rendered config the pods run with (backup policy,
// synchronous standbys, bootstrap mode) and the runtime's status (etcd
// membership and cluster version).
//
// It only reads. Imports: planner/live, planner/spec, planner/contract,
// client-go.
package observe
