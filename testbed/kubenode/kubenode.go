package kubenode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/testbed"
)

// Name is the first node's name; a cluster's nodes are node-0, node-1, ...
const Name = "node-0"

// Cluster is a control plane with real nodes.
type Cluster struct {
	*testbed.ControlPlane
	// HostIP is the machine's end of the first node's link: where the API
	// server and the cluster's DNS listen, and where servers of the test
	// (git, S3) listen for every node's pods to reach them (Expose).
	HostIP string
	// NodeIP is the first node's address.
	NodeIP string
	// DNSIP is the cluster DNS Service's address.
	DNSIP string
	// Nodes are the cluster's nodes, node-0 first.
	Nodes []*Node

	// services is the cluster's Service range, that of the first node's
	// slot; via is the node the machine routes it through.
	services string
	mu       sync.Mutex
	via      *Node
}

// Start starts a control plane and one real node, imports the images (OCI
// or Docker archives: images, under .cache/images, by name, such as
// "etcd-3.5"; the sandbox image is always imported) and waits until the
// node is Ready and its DNS answers. Everything stops and is removed when
// the test ends.
func Start(t testing.TB, images ...string) *Cluster {
	t.Helper()
	return StartNodes(t, 1, images...)
}

// StartNodes starts a control plane and n real nodes, as Start does one:
// each node in a slot of its own, with its own containerd (every image
// imported on each), kubelet and kube-proxy; the nodes are plugged into
// a network of their own (makeLAN) over which their pods reach each
// other. The Service range and the DNS are the cluster's: the range is
// the first node's slot's, and CoreDNS runs on the machine beside the
// control plane, so that the loss of a node (StopNode) takes neither with
// it.
func StartNodes(t testing.TB, n int, images ...string) *Cluster {
	t.Helper()
	testbed.Require(t, testbed.TierE2E, "a real node")
	checkMachine(t)
	if n < 1 || n > slots {
		t.Fatalf("a cluster of %d nodes", n)
	}
	archives := []string{Image(t, "pause")}
	for _, name := range images {
		archives = append(archives, Image(t, name))
	}
	c := &Cluster{}
	for i := range n {
		c.Nodes = append(c.Nodes, newNode(t, i))
	}
	first := c.Nodes[0]
	c.HostIP, c.NodeIP, c.DNSIP, c.services, c.via = first.HostIP, first.IP, first.slot.dnsIP(), first.slot.serviceCIDR(), first
	if err := c.makeLAN(); err != nil {
		t.Fatal(err)
	}
	// The machine reaches the cluster's Services through a node's
	// kube-proxy rules, as a load balancer in front of the nodes would.
	if err := ip("route", "add", c.services, "via", first.IP); err != nil {
		t.Fatal(err)
	}
	users := []testbed.User{{Name: "system:kube-proxy"}}
	for _, nd := range c.Nodes {
		users = append(users, testbed.User{Name: "system:node:" + nd.Name, Groups: []string{"system:nodes"}})
	}
	c.ControlPlane = testbed.StartWith(t, testbed.Options{Node: &testbed.NodeOptions{
		Address: c.HostIP, ServiceCIDR: c.services, Users: users,
	}})
	c.startDNS(t)
	for _, nd := range c.Nodes {
		nd.startContainerd(t)
		for _, a := range archives {
			nd.importImage(t, a)
		}
		nd.startKubelet(t, c)
		nd.startKubeProxy(t, c)
	}
	startProvisioner(t, c)
	for _, nd := range c.Nodes {
		c.waitNodeReady(t, nd.Name)
	}
	t.Cleanup(func() { c.report(t) })
	return c
}

// checkMachine skips the test when the machine cannot run a real node,
// and fails it when a program the node needs is missing.
func checkMachine(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a real node needs root (containerd, network namespaces, cgroups)")
	}
	// cgroup v1 (these machines) or v2 (current distributions, GitHub's
	// runners), detected here; the kubelet and containerd are configured
	// for it (cgroup.go, kubelet.go).
	cg, err := machineCgroups()
	if err != nil {
		t.Fatalf("a real node needs cgroups: %v", err)
	}
	if err := cg.checkDelegated(); err != nil {
		t.Fatalf("a real node here: %v", err)
	}
	for _, p := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "nsenter", "iptables"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("a real node needs %s: apt-get install containerd runc containernetworking-plugins iptables (.ci/run does)", p)
		}
	}
}

// makeLAN plugs every node of a cluster of more than one into the
// cluster's LAN and routes each node's pods to every other's.
func (c *Cluster) makeLAN() error {
	if len(c.Nodes) < 2 {
		return nil
	}
	lan := c.Nodes[0].slot
	if err := makeLAN(lan); err != nil {
		return err
	}
	for _, nd := range c.Nodes {
		if err := joinLAN(lan, nd.slot); err != nil {
			return err
		}
	}
	for _, from := range c.Nodes {
		for _, to := range c.Nodes {
			if from == to {
				continue
			}
			if err := routeTo(from.slot, to.slot); err != nil {
				return err
			}
		}
	}
	return nil
}

// Image returns the path of an image archive `make image` built under
// .cache/images, failing the test when it is missing.
func Image(t testing.TB, name string) string {
	t.Helper()
	bin, err := testbed.FindBin("kubelet")
	if err != nil {
		testbed.Missing(t, err, "make testbin-node")
	}
	p := filepath.Join(filepath.Dir(filepath.Dir(bin)), "images", name+".tar")
	if _, err := os.Stat(p); err != nil {
		testbed.Missing(t, fmt.Errorf("image archive %s: %w", p, err), "make image")
	}
	return p
}

// waitNodeReady waits until the node reports Ready.
func (c *Cluster) waitNodeReady(t testing.TB, name string) {
	t.Helper()
	cl := c.Client(t)
	err := waitFor(2*time.Minute, func() (bool, error) {
		n, err := cl.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s not ready: %v", name, err)
	}
}

// waitFor polls cond every 200 ms until it holds, fails, or timeout.
func waitFor(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// report shows, when the test failed, every pod's phase and conditions
// and the end of each container's log, as `kubectl describe` and `kubectl
// logs` would: read from the API server and the kubelet's log folder.
func (c *Cluster) report(t testing.TB) {
	if !t.Failed() {
		return
	}
	pods, err := c.Client(t).CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("node report: %v", err)
		return
	}
	for _, p := range pods.Items {
		var states []string
		for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			state := fmt.Sprintf("%s ready=%v restarts=%d", s.Name, s.Ready, s.RestartCount)
			switch {
			case s.State.Waiting != nil:
				state += " waiting " + s.State.Waiting.Reason + ": " + s.State.Waiting.Message
			case s.State.Terminated != nil:
				state += fmt.Sprintf(" terminated %s (%d): %s", s.State.Terminated.Reason, s.State.Terminated.ExitCode, s.State.Terminated.Message)
			}
			if l := s.LastTerminationState.Terminated; l != nil {
				state += fmt.Sprintf("; last %s (%d)", l.Reason, l.ExitCode)
			}
			states = append(states, state)
		}
		t.Logf("pod %s/%s on %s %s %s: %s", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, strings.Join(states, "; "))
	}
	for _, nd := range c.Nodes {
		logs, _ := filepath.Glob(filepath.Join(nd.root, "pod-logs", "*", "*", "*.log"))
		for _, f := range logs {
			data, _ := os.ReadFile(f)
			if len(data) > 2500 {
				data = data[len(data)-2500:]
			}
			rel, _ := filepath.Rel(filepath.Join(nd.root, "pod-logs"), f)
			t.Logf("log %s: %s (tail):\n%s", nd.Name, rel, data)
		}
	}
}
