// Package kubenode starts real Kubernetes nodes for tests: a control
// plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
// and one node (Start) or several (StartNodes), each in a network
// namespace of the test's own with containerd and runc, a kubelet,
// kube-proxy in iptables mode and a bridge CNI; CoreDNS with no upstream
// and a local-path volume provisioner serve the cluster. Pods run in real
// containers from images built on this machine (make image) and imported
// into every node's containerd; nothing is ever pulled.
//
// Addresses are the test's own: each node takes a slot (0-199) and with it
// the veth link 10.250.<slot>.0/30 between the machine and the node's
// namespace (the machine on .1, the node on .2) and pods in
// 10.244.<slot>.0/24, routed from the machine into the namespace so that
// tests reach pods directly. The cluster's Services are in
// 10.251.<slot>.0/24 of its first node's slot, routed through a running
// node's kube-proxy. The API server and CoreDNS listen on the first
// node's link address on the machine (HostIP), where Expose also makes a
// server of the test on loopback reachable from pods. The nodes of a
// cluster of several are plugged into a bridge in a namespace of the
// cluster's own (cairn-lan-<first slot>, 10.252.<slot>.1/16 on each
// node), over which their pods reach each other; the machine forwards
// nothing. StopNode stops a whole node as a crashed host; Partition cuts
// one off every network while it runs on, Cut off some of them (the
// machine's link or the LAN), and Heal puts it back;
// Node.DialContext dials from inside a node's namespace.
//
// Everything the nodes made (processes, containers, mounts, network
// namespaces, links, cgroups) is taken down when the test ends, and a
// slot left behind by a test process that died is cleaned before reuse.
//
// It needs root and, from Debian's packages, containerd, runc,
// containernetworking-plugins, iptables and iproute2 (.ci/run installs
// them); the binaries come from `make testbin-node`. docs/testing.md says
// how to use it.
package kubenode
