// Package admission holds the cluster-wide admission policy cairn's
// PostgreSQL runtimes run under, as install manifests (kustomization.yaml,
// runtime-policy.yaml), and hands them to the test beds, which install
// them on every control plane they start.
//
// A runtime's Role lets it patch its members' pods, by name, to set their
// role label; RBAC cannot narrow a patch to a field, so the
// ValidatingAdmissionPolicy here refuses every other change a runtime
// makes to its members' pods: their spec (an image swapped), other
// labels, annotations, owners and finalizers, and role values the
// runtime does not use. The tests apply it on a real kube-apiserver and
// drive it with the runtime's own identity and rendered Role.
package admission
