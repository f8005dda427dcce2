package kubenode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/testbed"
)

// Name is the node's name.
const Name = "node-0"

// Cluster is a control plane with one real node.
type Cluster struct {
	*testbed.ControlPlane
	// HostIP is the machine's end of the link to the node: where servers
	// of the test (git, S3) listen for the node's pods to reach them.
	HostIP string
	// NodeIP is the node's address.
	NodeIP string
	// DNSIP is the cluster DNS Service's address.
	DNSIP string

	slot slot
	root string
	// containerd is the address of containerd's socket.
	containerd string
}

// Start starts a control plane and a real node, imports the images (OCI
// or Docker archives: images, under .cache/images, by name, such as
// "etcd-3.5"; the sandbox image is always imported) and waits until the
// node is Ready and its DNS answers. Everything stops and is removed when
// the test ends.
func Start(t testing.TB, images ...string) *Cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a real node needs root (containerd, network namespaces, cgroups)")
	}
	// The node is built for cgroup v1, as these machines run (the
	// kubelet with failCgroupV1: false); on a machine with cgroup v2 only,
	// such as GitHub's runners, it says so and does not start.
	if _, err := cgroupHierarchies(); err != nil {
		t.Skipf("a real node here needs cgroup v1: %v", err)
	}
	for _, p := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "nsenter", "iptables"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("a real node needs %s: apt-get install containerd runc containernetworking-plugins iptables (.ci/run does)", p)
		}
	}
	archives := []string{Image(t, "pause")}
	for _, name := range images {
		archives = append(archives, Image(t, name))
	}
	s, err := takeSlot()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("", "cairn-node-")
	if err != nil {
		release(s)
		t.Fatal(err)
	}
	c := &Cluster{HostIP: s.hostIP(), NodeIP: s.nodeIP(), DNSIP: s.dnsIP(), slot: s, root: root,
		containerd: filepath.Join(root, "containerd", "containerd.sock")}
	// Cleanups run last-registered first: this one runs after every
	// process the node started has been stopped.
	t.Cleanup(func() {
		cleanSlot(s)
		_ = os.RemoveAll(root)
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
	c.ControlPlane = testbed.StartWith(t, testbed.Options{Node: &testbed.NodeOptions{
		Address: s.hostIP(), ServiceCIDR: s.serviceCIDR(),
		Users: []testbed.User{
			{Name: "system:node:" + Name, Groups: []string{"system:nodes"}},
			{Name: "system:kube-proxy"},
		},
	}})
	c.startContainerd(t)
	for _, a := range archives {
		c.importImage(t, a)
	}
	c.startKubelet(t)
	c.startKubeProxy(t)
	c.startDNS(t)
	startProvisioner(t, c)
	c.waitNodeReady(t)
	t.Cleanup(func() { c.report(t) })
	return c
}

// Image returns the path of an image archive `make image` built under
// .cache/images, failing the test when it is missing.
func Image(t testing.TB, name string) string {
	t.Helper()
	bin, err := testbed.FindBin("kubelet")
	if err != nil {
		t.Fatalf("%v: run `make testbin-node`", err)
	}
	p := filepath.Join(filepath.Dir(filepath.Dir(bin)), "images", name+".tar")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("image archive %s: %v: run `make image`", p, err)
	}
	return p
}

// run starts a node process: in the node's network namespace and its
// system cgroup, so that whatever it starts (containerd's shims and their
// containers) is found and stopped with the node.
func (c *Cluster) run(t testing.TB, name, bin string, args ...string) *testbed.Process {
	t.Helper()
	hs, err := cgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	var join strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&join, "echo $$ > %s/%s/system/cgroup.procs && ", h, c.slot.cgroup())
	}
	script := join.String() + `exec nsenter --net=/var/run/netns/"$0" -- "$@"`
	return testbed.Run(t, c.root, name, "sh", append([]string{"-c", script, c.slot.netns(), bin}, args...)...)
}

// waitNodeReady waits until the node reports Ready.
func (c *Cluster) waitNodeReady(t testing.TB) {
	t.Helper()
	cl := c.Client(t)
	err := waitFor(2*time.Minute, func() (bool, error) {
		n, err := cl.CoreV1().Nodes().Get(context.Background(), Name, metav1.GetOptions{})
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
		t.Fatalf("node %s not ready: %v", Name, err)
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
		t.Logf("pod %s/%s %s %s: %s", p.Namespace, p.Name, p.Status.Phase, p.Status.PodIP, strings.Join(states, "; "))
	}
	logs, _ := filepath.Glob(filepath.Join(c.root, "pod-logs", "*", "*", "*.log"))
	for _, f := range logs {
		data, _ := os.ReadFile(f)
		if len(data) > 2500 {
			data = data[len(data)-2500:]
		}
		rel, _ := filepath.Rel(filepath.Join(c.root, "pod-logs"), f)
		t.Logf("log %s (tail):\n%s", rel, data)
	}
}
