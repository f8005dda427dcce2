// Package testbed starts a real Kubernetes control plane for tests: etcd
// and kube-apiserver (and, when asked, kube-controller-manager), built
// from the Go module proxy into .cache/bin by `make testbin testbin-kube`.
// It is for tests only; nothing in cairn's binary imports it.
//
// Beside the control plane: a node stand-in (StartNode) that does what a
// kubelet and a volume provisioner do, and a sync stand-in (NewSync) that
// does what Flux does with the rendered output. docs/testing.md says how
// they work.
package testbed
