package kubenode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-dev/cairn/testbed"
)

// Node is one real node of a Cluster: a slot of the machine (its network
// namespace, its link to the machine and its pod range), its own
// containerd, kubelet and kube-proxy, and a folder for their files, its
// pods' logs and the volumes made on it.
type Node struct {
	// Name is the node's name, node-<its index in the cluster>.
	Name string
	// IP is the node's address.
	IP string
	// HostIP is the machine's end of the node's link.
	HostIP string
	// PodCIDR is the range of the node's pods' addresses.
	PodCIDR string

	slot slot
	root string
	// containerd is the address of containerd's socket.
	containerd string
	stopped    atomic.Bool
	// cut: the Links a Partition or Cut took from it that Heal has not
	// yet given back; 0 when none.
	cut atomic.Uint32
}

// newNode takes a slot for the cluster's i-th node and makes its folder,
// network namespace and cgroups. Whatever the node makes is taken down
// when the test ends, after every process it started has stopped
// (cleanups run last-registered first).
func newNode(t testing.TB, i int) *Node {
	t.Helper()
	s, err := takeSlot()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("", "cairn-node-")
	if err != nil {
		release(s)
		t.Fatal(err)
	}
	n := &Node{Name: fmt.Sprintf("node-%d", i), IP: s.nodeIP(), HostIP: s.hostIP(), PodCIDR: s.podCIDR(), slot: s, root: root,
		containerd: filepath.Join(root, "containerd", "containerd.sock")}
	t.Cleanup(func() {
		cleanSlot(s, s.dir())
		release(s)
	})
	if err := os.WriteFile(filepath.Join(s.dir(), "root"), []byte(root), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := makeNetwork(s); err != nil {
		t.Fatal(err)
	}
	if err := makeCgroups(s); err != nil {
		t.Fatal(err)
	}
	return n
}

// run starts a node process: in the node's network namespace and its
// system cgroup, so that whatever it starts (containerd's shims and their
// containers) is found and stopped with the node. Its log is
// <node>-<name>.log in the node's folder.
func (n *Node) run(t testing.TB, name, bin string, args ...string) *testbed.Process {
	t.Helper()
	hs, err := cgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	var join strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&join, "echo $$ > %s/%s/system/cgroup.procs && ", h, n.slot.cgroup())
	}
	script := join.String() + `exec nsenter --net=/var/run/netns/"$0" -- "$@"`
	return testbed.Run(t, n.root, n.Name+"-"+name, "sh", append([]string{"-c", script, n.slot.netns(), bin}, args...)...)
}

// Stopped reports that StopNode stopped the node.
func (n *Node) Stopped() bool { return n.stopped.Load() }

// node is the cluster's node of that name.
func (c *Cluster) node(t testing.TB, name string) *Node {
	t.Helper()
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("the cluster has no node %q", name)
	return nil
}

// StopNode stops the whole node at once, as a host that crashed or lost
// its power looks to the rest of the cluster: its links go down first,
// so its address and its pods' addresses stop answering (connections to
// them time out; nothing refuses them), then every process of the node
// is killed with SIGKILL: the kubelet, kube-proxy, containerd, its shims
// and every container. The other nodes, the control plane and the
// cluster's DNS run on; when the machine routed the Service range through
// this node, it routes it through another running node from then on. The
// node is not started again; its files and volumes stay until the test
// ends.
//
// The API server sees what it sees of a crashed host: nothing at first.
// The node's Lease is no longer renewed, so once kube-controller-manager's
// node-monitor grace period (50 s) has passed, the node's Ready condition
// turns Unknown (the node is NotReady), it is tainted
// node.kubernetes.io/unreachable, and its pods turn not Ready, which
// takes them out of their Services' endpoints. The pods stay, Running in
// the API, until taint-based eviction deletes them when their toleration
// of the taint ends (300 s by default), and even then they stay
// Terminating, since no kubelet confirms their end: a StatefulSet makes
// such a member again only once it is force-deleted.
func (c *Cluster) StopNode(t testing.TB, name string) {
	t.Helper()
	n := c.node(t, name)
	if !n.stopped.CompareAndSwap(false, true) {
		t.Fatalf("node %s is stopped already", name)
	}
	if err := cutNetwork(n.slot, len(c.Nodes) > 1); err != nil {
		t.Fatalf("stop node %s: %v", name, err)
	}
	if err := killProcs(n.slot); err != nil {
		t.Fatalf("stop node %s: %v", name, err)
	}
	c.routeServicesAround(t, n)
}

// Cordon marks a node unschedulable, as `kubectl cordon` does: pods
// already on it stay, new ones go elsewhere.
func (c *Cluster) Cordon(t testing.TB, name string) { c.setUnschedulable(t, name, true) }

// Uncordon makes a cordoned node schedulable again.
func (c *Cluster) Uncordon(t testing.TB, name string) { c.setUnschedulable(t, name, false) }

func (c *Cluster) setUnschedulable(t testing.TB, name string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	if _, err := c.Client(t).CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("set node %s unschedulable %v: %v", name, on, err)
	}
}

// NodeOf is the node a pod runs on, failing the test when the pod is not
// scheduled yet.
func (c *Cluster) NodeOf(t testing.TB, namespace, pod string) *Node {
	t.Helper()
	p, err := c.Client(t).CoreV1().Pods(namespace).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c.nodeOfPod(t, p)
}

func (c *Cluster) nodeOfPod(t testing.TB, p *corev1.Pod) *Node {
	t.Helper()
	if p.Spec.NodeName == "" {
		t.Fatalf("pod %s/%s is not scheduled", p.Namespace, p.Name)
	}
	return c.node(t, p.Spec.NodeName)
}
