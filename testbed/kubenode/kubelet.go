package kubenode

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/testbed"
)

// kubeletConfig is the kubelet's configuration on these machines: the
// cgroupfs driver on either hierarchy (cgroupLines), the node's own
// cgroup as its root, containerd's socket, the node's DNS with no
// upstream (an empty resolv.conf), and no eviction or image garbage
// collection, which a test's short life and a shared disk would only make
// flaky. The API server reaches it without a client certificate, so it
// allows what is asked of it; it listens on the node's address only.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
%[7]scgroupDriver: cgroupfs
cgroupRoot: /%[1]s
failSwapOn: false
containerRuntimeEndpoint: unix://%[2]s
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
address: %[3]s
port: 10250
readOnlyPort: 0
healthzPort: 0
clusterDomain: cluster.local
clusterDNS: [%[4]s]
resolvConf: %[5]s
evictionHard: {memory.available: "0%%", nodefs.available: "0%%", imagefs.available: "0%%", nodefs.inodesFree: "0%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
serializeImagePulls: false
podLogsDir: %[6]s
`

// kubeProxyConfig is kube-proxy's: iptables, masquerading all Service
// traffic (pods reaching a Service backed by a pod on the same bridge),
// and no conntrack sysctls, which a network namespace may not set.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %[1]q}
mode: iptables
clusterCIDR: %[2]s
hostnameOverride: %[3]s
bindAddress: %[4]s
healthzBindAddress: ""
metricsBindAddress: ""
nodePortAddresses: [primary]
iptables: {masqueradeAll: true, syncPeriod: 5s, minSyncPeriod: 0s}
conntrack: {maxPerCore: 0, min: 0}
`

// kubeletYAML is kubeletConfig for the node's cgroup (cgroupRoot) on
// hierarchy v: the cgroupfs driver works on both (containerd's runc
// uses it too: SystemdCgroup = false); cgroup v1 also needs
// failCgroupV1: false, since the kubelet refuses v1 by default.
func kubeletYAML(v cgroupVersion, cgroupRoot, runtime, ip, dns, resolv, podLogs string) string {
	lines := ""
	if v == cgroupV1 {
		lines = "failCgroupV1: false\n"
	}
	return fmt.Sprintf(kubeletConfig, cgroupRoot, runtime, ip, dns, resolv, podLogs, lines)
}

func (n *Node) startKubelet(t testing.TB, c *Cluster) {
	t.Helper()
	dir := filepath.Join(n.root, "kubelet")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	resolv := filepath.Join(n.root, "resolv.conf")
	config := filepath.Join(n.root, "kubelet.yaml")
	if err := os.WriteFile(resolv, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cg, err := machineCgroups()
	if err != nil {
		t.Fatal(err)
	}
	data := kubeletYAML(cg.version, n.slot.cgroup(), n.containerd, n.IP, c.DNSIP, resolv, filepath.Join(n.root, "pod-logs"))
	if err := os.WriteFile(config, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	n.run(t, "kubelet", testbed.Bin(t, "kubelet"), "--config", config,
		"--kubeconfig", c.KubeconfigFor(t, "system:node:"+n.Name),
		"--root-dir", dir, "--volume-plugin-dir", filepath.Join(n.root, "volume-plugins"), "--node-ip", n.IP, "--hostname-override", n.Name)
}

func (n *Node) startKubeProxy(t testing.TB, c *Cluster) {
	t.Helper()
	config := filepath.Join(n.root, "kube-proxy.yaml")
	data := fmt.Sprintf(kubeProxyConfig, c.KubeconfigFor(t, "system:kube-proxy"), n.slot.podCIDR(), n.Name, n.IP)
	if err := os.WriteFile(config, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	n.run(t, "kube-proxy", testbed.Bin(t, "kube-proxy"), "--config", config)
}
