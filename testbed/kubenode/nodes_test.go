package kubenode_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// etcdImage is the image of the test's pods: etcd members, and etcd's
// gRPC proxy as a client in a pod that the test can ask.
const etcdImage = "quay.io/coreos/etcd:v3.7.3"

// TestRealNodeTwoNodes starts a cluster of two real nodes and shows what
// the loss of a node needs: pods of one StatefulSet scheduled on both
// (required anti-affinity), two etcd members that find each other by
// their names in the cluster's DNS and peer from pod to pod across the
// nodes, a Service reached from a pod on each node, and then one node
// stopped as a crashed host: the API server sees it go NotReady and its
// pods not Ready, while the other node stays Ready, runs new pods that
// resolve names and reach Services, and the machine reaches the
// cluster's DNS through it.
func TestRealNodeTwoNodes(t *testing.T) {
	c := kubenode.StartNodes(t, 2, "etcd-3.7")
	ctx := context.Background()
	cl := c.Client(t)
	ns := c.Namespace(t, "nodes-test")

	members := etcdMembers(ns)
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Selector: members.Spec.Selector.MatchLabels, Ports: []corev1.ServicePort{{Name: "peer", Port: 2380}}}},
		clientService("first", map[string]string{"statefulset.kubernetes.io/pod-name": "m-0"}),
	} {
		if _, err := cl.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.AppsV1().StatefulSets(ns).Create(ctx, members, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m0 := waitPod(t, cl, ns, "m-0", running)
	m1 := waitPod(t, cl, ns, "m-1", running)
	if m0.Spec.NodeName == m1.Spec.NodeName {
		t.Fatalf("both members on %s", m0.Spec.NodeName)
	}
	for _, p := range []*corev1.Pod{m0, m1} {
		n := c.NodeOf(t, ns, p.Name)
		if !netip.MustParsePrefix(n.PodCIDR).Contains(netip.MustParseAddr(p.Status.PodIP)) {
			t.Errorf("pod %s on %s has %s, outside the node's pod range %s", p.Name, n.Name, p.Status.PodIP, n.PodCIDR)
		}
	}
	// Two members agree on a leader and take a write: their names
	// resolved on each node, their peer traffic from pod to pod across
	// the nodes.
	testbed.Eventually(t, "two members with one leader", func() error {
		return etcdPut(ctx, m1.Status.PodIP+":2379", "across", "nodes", 2)
	})

	// A pod on each node reaches the Service of m-0 (on one of them).
	for _, n := range c.Nodes {
		p := waitPod(t, cl, ns, startProxy(t, cl, ns, n.Name, "first"), running)
		testbed.Eventually(t, "a write through the Service from "+n.Name, func() error {
			return etcdPut(ctx, p.Status.PodIP+":23790", "from-"+n.Name, "ok", 0)
		})
	}

	// The node of m-0 stops as a crashed host; the other runs on.
	lost, kept := c.NodeOf(t, ns, "m-0"), c.NodeOf(t, ns, "m-1")
	stopped := time.Now()
	c.StopNode(t, lost.Name)
	if _, err := net.DialTimeout("tcp", m0.Status.PodIP+":2379", 2*time.Second); err == nil {
		t.Errorf("a pod of the stopped node %s still answers", lost.Name)
	}
	servesOn(t, c, ns, kept.Name, "solo")
	if addrs, err := lookup(c.Resolver(), "solo."+ns+".svc.cluster.local"); err != nil || len(addrs) != 1 {
		t.Errorf("the machine resolves solo through %s: %v %v", kept.Name, addrs, err)
	}
	waitFor(t, 2*time.Minute, "the API server to see "+lost.Name+" NotReady and its pods not Ready", func() error {
		if r := nodeReady(ctx, cl, lost.Name); r == corev1.ConditionTrue {
			return fmt.Errorf("%s Ready %s", lost.Name, r)
		}
		pod, err := cl.CoreV1().Pods(ns).Get(ctx, "m-0", metav1.GetOptions{})
		if err != nil || podReady(pod) {
			return fmt.Errorf("m-0 still ready (%v)", err)
		}
		return nil
	})
	notReady := time.Since(stopped)
	if r := nodeReady(ctx, cl, kept.Name); r != corev1.ConditionTrue {
		t.Errorf("%s Ready %s after the loss of %s", kept.Name, r, lost.Name)
	}
	if pod, err := cl.CoreV1().Pods(ns).Get(ctx, "m-0", metav1.GetOptions{}); err != nil {
		t.Errorf("m-0 of the lost node: %v; it stays until eviction", err)
	} else if pod.DeletionTimestamp != nil {
		t.Errorf("m-0 of the lost node deleted at %v; it stays until eviction", pod.DeletionTimestamp)
	}
	t.Logf("%s stopped; NotReady with its pods not Ready in the API after %.1fs", lost.Name, notReady.Seconds())
}

// servesOn starts a one-member etcd named name on node, behind a Service
// of the same name, and a gRPC proxy on node that reaches it through the
// Service's DNS name, and writes through the proxy: a new pod on node
// runs, and a pod there resolves names and reaches Services.
func servesOn(t *testing.T, c *kubenode.Cluster, ns, node, name string) {
	t.Helper()
	ctx := context.Background()
	cl := c.Client(t)
	pod := etcdPod(name, ns)
	pod.Spec.Containers[0].Args = append(pod.Spec.Containers[0].Args, "--initial-cluster", name+"=http://localhost:2380")
	pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	if _, err := cl.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CoreV1().Services(ns).Create(ctx, clientService(name, pod.Labels), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cl, ns, name, running)
	p := waitPod(t, cl, ns, startProxy(t, cl, ns, node, name), running)
	testbed.Eventually(t, "a write through the Service "+name+" from "+node, func() error {
		return etcdPut(ctx, p.Status.PodIP+":23790", name, "ok", 0)
	})
}

// etcdMembers is a StatefulSet of two etcd members, one per node
// (required anti-affinity), that find each other by their names under
// the headless Service m.
func etcdMembers(ns string) *appsv1.StatefulSet {
	labels := map[string]string{"app": "m"}
	peer := func(name string) string { return fmt.Sprintf("http://%s.m.%s.svc.cluster.local:2380", name, ns) }
	pod := etcdPod("$(POD_NAME)", ns)
	pod.Spec.Containers[0].Args = append(pod.Spec.Containers[0].Args,
		"--initial-advertise-peer-urls", peer("$(POD_NAME)"), "--listen-peer-urls", "http://0.0.0.0:2380",
		"--initial-cluster", "m-0="+peer("m-0")+",m-1="+peer("m-1"))
	pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: corev1.LabelHostname}},
	}}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), ServiceName: "m", PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
		},
	}
}

// etcdPod is a pod of one etcd member named name, its data in an
// emptyDir.
func etcdPod(name, ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "etcd", Image: etcdImage, ImagePullPolicy: corev1.PullNever,
				Env:     []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Command: []string{"/usr/local/bin/etcd"},
				Args: []string{"--name", name, "--data-dir", "/data/etcd", "--listen-client-urls", "http://0.0.0.0:2379",
					"--advertise-client-urls", fmt.Sprintf("http://%s.%s.svc.cluster.local:2379", name, ns)},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// clientService is a ClusterIP Service on etcd's client port.
func clientService(name string, selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}}}
}

// startProxy starts etcd's gRPC proxy on node, a client of the Service
// svc by its name, and returns the pod's name: a write through the proxy
// is a pod on that node reaching the Service.
func startProxy(t *testing.T, cl kubernetes.Interface, ns, node, svc string) string {
	t.Helper()
	name := "proxy-" + svc + "-" + node
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: node},
			Containers: []corev1.Container{{Name: "proxy", Image: etcdImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/usr/local/bin/etcd", "grpc-proxy", "start", "--listen-addr", "0.0.0.0:23790",
					"--endpoints", svc + "." + ns + ".svc.cluster.local:2379"}}},
		},
	}
	if _, err := cl.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// etcdPut writes key through endpoint and, when members is not zero,
// checks that the cluster has that many started members.
func etcdPut(ctx context.Context, endpoint, key, value string, members int) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if members > 0 {
		ml, err := cli.MemberList(ctx)
		if err != nil {
			return err
		}
		var started []string
		for _, m := range ml.Members {
			if len(m.ClientURLs) > 0 {
				started = append(started, m.Name)
			}
		}
		if len(started) != members {
			return fmt.Errorf("started members %v, want %d", started, members)
		}
	}
	if _, err := cli.Put(ctx, key, value); err != nil {
		return fmt.Errorf("put through %s: %w", endpoint, err)
	}
	return nil
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" }

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeReady(ctx context.Context, cl kubernetes.Interface, name string) corev1.ConditionStatus {
	n, err := cl.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return corev1.ConditionStatus("unknown: " + err.Error())
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// waitFor is testbed.Eventually with a bound of its own: the node
// lifecycle controller's grace period is longer than Eventually's minute.
func waitFor(t *testing.T, within time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, strings.TrimSpace(err.Error()))
		}
		time.Sleep(500 * time.Millisecond)
	}
}
