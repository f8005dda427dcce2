// Package admission holds the cluster-wide admission policy cairn's
// runtimes run under, as install manifests (kustomization.yaml,
// runtime-policy.yaml), and hands them to the test beds, which install
// them on every control plane they start.
//
// It covers what RBAC cannot narrow, for requests of a runtime's own
// ServiceAccount (<cluster>-runtime, the cluster read from its name):
//   - A PostgreSQL runtime's Role lets it patch its members' pods, by
//     name, to set their role label; RBAC cannot narrow a patch to a
//     field, so the policy refuses every other change a runtime makes to
//     its members' pods: their spec (an image swapped), other labels,
//     annotations, owners and finalizers, and role values the runtime
//     does not use.
//   - A runtime's Role lets it create Secrets, ConfigMaps and Leases,
//     and RBAC cannot narrow create by name; the policy lets a runtime
//     create or update only its own cluster's, by exact name (its CA and
//     certificate Secrets, its status ConfigMap, its leader Lease), so
//     it cannot plant another cluster's CA, backup endpoint, password,
//     CA record or Lease (issue 40, docs/security.md).
//
// The tests apply it on a real kube-apiserver and drive it with the
// runtime's own identity and rendered Role.
package admission
