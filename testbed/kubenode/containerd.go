package kubenode

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/testbed/sandbox"
)

// SandboxImage is the pause image every pod's sandbox runs; make image
// builds it (images/build/pause).
const SandboxImage = sandbox.Image

// containerdConfig is containerd's configuration for the node: its own
// root, state and socket; the CRI plugin with the node's bridge CNI, the
// locally built sandbox image, and every registry pointed at a closed
// port, so that nothing is ever pulled from outside the machine. The
// sandbox may not lower oom_score_adj, hence restrict_oom_score_adj. runc
// manages cgroups as files (SystemdCgroup = false), as the kubelet's
// cgroupfs driver does, on cgroup v1 and v2 alike: no systemd is asked.
const containerdConfig = `version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %[3]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[6]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[7]q
`

// closedRegistry sends every pull to a port nothing listens on.
const closedRegistry = `server = "http://127.0.0.1:9"
[host."http://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
`

// cniConfig is the node's bridge network: pods on the cni0 bridge with
// addresses of the node's pod range, the bridge their gateway.
const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": %[1]q,
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %[2]q, "ranges": [[{"subnet": %[3]q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

// containerdTOML is containerdConfig for a node whose containerd keeps
// its files in dir, listens on socket and finds the CNI configuration in
// cni. It is the same on cgroup v1 and v2.
func containerdTOML(dir, socket, cni string) string {
	return fmt.Sprintf(containerdConfig, filepath.Join(dir, "root"), filepath.Join(dir, "state"),
		socket, filepath.Join(dir, "opt"), SandboxImage, cni, filepath.Join(dir, "hosts"))
}

func (n *Node) startContainerd(t testing.TB) {
	t.Helper()
	dir := filepath.Join(n.root, "containerd")
	cni := filepath.Join(n.root, "cni")
	hosts := filepath.Join(dir, "hosts", "_default")
	for _, d := range []string{dir, cni, hosts} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(dir, "config.toml"):        containerdTOML(dir, n.containerd, cni),
		filepath.Join(hosts, "hosts.toml"):       closedRegistry,
		filepath.Join(cni, "10-bridge.conflist"): fmt.Sprintf(cniConfig, n.slot.netns(), filepath.Join(n.root, "ipam"), n.slot.podCIDR()),
	}
	for p, data := range files {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := n.run(t, "containerd", "containerd", "--config", filepath.Join(dir, "config.toml"))
	err := waitFor(30*time.Second, func() (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("containerd exited: %s", p.Tail())
		}
		conn, err := net.Dial("unix", n.containerd)
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// importImage imports an image archive into the node's containerd, in
// the namespace the kubelet's images live in.
func (n *Node) importImage(t testing.TB, archive string) {
	t.Helper()
	out, err := exec.Command("ctr", "--address", n.containerd, "--namespace", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("import %s: %v: %s", archive, err, bytes.TrimSpace(out))
	}
	if err := n.nameByDigest(); err != nil {
		t.Fatal(err)
	}
}

// ImportImage imports another image archive of .cache/images into every
// running node.
func (c *Cluster) ImportImage(t testing.TB, name string) {
	t.Helper()
	archive := Image(t, name)
	for _, n := range c.Nodes {
		if !n.Stopped() {
			n.importImage(t, archive)
		}
	}
}

// KillContainer kills a pod's container with SIGKILL through the
// containerd of the pod's node, as the kernel's OOM killer or a crash
// would: the kubelet sees it exit and starts it again (after a back-off
// that grows with each crash). It reports whether the container was
// running to be killed (never on a stopped node).
func (c *Cluster) KillContainer(t testing.TB, namespace, pod, container string) bool {
	t.Helper()
	p, err := c.Client(t).CoreV1().Pods(namespace).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := c.nodeOfPod(t, p)
	if n.Stopped() {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name != container {
			continue
		}
		id, ok := strings.CutPrefix(s.ContainerID, "containerd://")
		if !ok || s.State.Running == nil {
			return false
		}
		out, err := exec.Command("ctr", "--address", n.containerd, "--namespace", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id).CombinedOutput()
		if err != nil {
			// It ended between the API's word and the kill.
			if strings.Contains(string(out), "not found") || strings.Contains(string(out), "process already finished") {
				return false
			}
			t.Fatalf("kill %s of %s/%s: %v: %s", container, namespace, pod, err, bytes.TrimSpace(out))
		}
		return true
	}
	t.Fatalf("pod %s/%s has no container %s", namespace, pod, container)
	return false
}
