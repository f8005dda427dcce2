package kubenode

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cairn-dev/cairn/testbed"
)

// corefile serves the cluster's names from the API server and nothing
// else: there is no forward plugin, so a name outside the cluster gets
// no answer from anywhere beyond the machine.
const corefile = `.:53 {
    bind %[1]s
    ready %[1]s:8181
    errors
    cache 5
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %[2]s testbed
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`

// startDNS runs CoreDNS on the machine, on HostIP beside the API server,
// behind the kube-dns Service at DNSIP (a Service without a selector, its
// EndpointSlice naming HostIP), and waits until it is ready. It is the
// cluster's, not a node's: every node's pods reach it, and it answers on
// when a node is lost, as a cluster's CoreDNS replicas on other nodes do.
func (c *Cluster) startDNS(t testing.TB) {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(corefile, c.HostIP, c.Kubeconfig(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	p := testbed.Run(t, dir, "coredns", testbed.Bin(t, "coredns"), "-conf", config)
	ctx := context.Background()
	cl := c.Client(t)
	ports := []corev1.ServicePort{
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
		{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"},
		Spec: corev1.ServiceSpec{ClusterIP: c.DNSIP, Ports: ports}}
	if _, err := cl.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the kube-dns Service: %v", err)
	}
	udp, tcp, port := corev1.ProtocolUDP, corev1.ProtocolTCP, int32(53)
	names := []string{"dns", "dns-tcp"}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-host", Namespace: "kube-system", Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns", discoveryv1.LabelManagedBy: "kubenode.cairn.test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{c.HostIP}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &names[0], Protocol: &udp, Port: &port}, {Name: &names[1], Protocol: &tcp, Port: &port}},
	}
	if _, err := cl.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the kube-dns EndpointSlice: %v", err)
	}
	ready := "http://" + net.JoinHostPort(c.HostIP, "8181") + "/ready"
	err := waitFor(time.Minute, func() (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("coredns exited: %s", p.Tail())
		}
		resp, err := http.Get(ready)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("CoreDNS not ready: %v", err)
	}
}

// Resolver is a resolver that asks the cluster's DNS, through its
// Service address (so through kube-proxy), as a pod would.
func (c *Cluster) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(c.DNSIP, "53"))
	}}
}

// PodLookup looks names up as a pod of namespace does: the cluster DNS
// with the search path the kubelet writes into its resolv.conf
// (<namespace>.svc.cluster.local, svc.cluster.local, cluster.local, at
// ndots 5), so that "shop-rw" or "shop-rw.gitops.svc" resolve as they do
// in the cluster.
func (c *Cluster) PodLookup(namespace string) func(ctx context.Context, host string) ([]string, error) {
	r := c.Resolver()
	search := []string{namespace + ".svc.cluster.local", "svc.cluster.local", "cluster.local"}
	return func(ctx context.Context, host string) ([]string, error) {
		if net.ParseIP(host) != nil {
			return []string{host}, nil
		}
		names := []string{host}
		if strings.Count(host, ".") < 5 && !strings.HasSuffix(host, ".") {
			names = names[:0]
			for _, s := range search {
				names = append(names, host+"."+s)
			}
			names = append(names, host)
		}
		var last error
		for _, n := range names {
			addrs, err := r.LookupHost(ctx, n)
			if err == nil && len(addrs) > 0 {
				return addrs, nil
			}
			last = err
		}
		return nil, fmt.Errorf("look up %s as a pod of %s would: %w", host, namespace, last)
	}
}
