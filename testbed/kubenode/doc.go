// Package kubenode starts a real Kubernetes node for tests: a control
// plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
// and, in a network namespace of the test's own, containerd with runc, a
// kubelet, kube-proxy in iptables mode, a bridge CNI, CoreDNS with no
// upstream, and a local-path volume provisioner. Pods run in real
// containers from images built on this machine (make image) and imported
// into containerd; nothing is ever pulled.
//
// Addresses are the test's own: each node takes a slot (0-199) and with it
// the veth link 10.250.<slot>.0/30 between the machine and the node's
// namespace (the API server on .1, the node on .2), pods in
// 10.244.<slot>.0/24 and Services in 10.251.<slot>.0/24, routed from the
// machine into the namespace so that tests reach pods and Services
// directly; Expose makes a server of the test on loopback reachable from
// pods at HostIP. Everything the node made (processes, containers, mounts,
// network namespaces, cgroups) is taken down when the test ends, and a
// slot left behind by a test process that died is cleaned before reuse.
//
// It needs root and, from Debian's packages, containerd, runc,
// containernetworking-plugins, iptables and iproute2 (.ci/run installs
// them); the binaries come from `make testbin-node`. docs/testing.md says
// how to use it.
package kubenode
