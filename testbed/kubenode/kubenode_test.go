package kubenode_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// TestRealNodeRunsPods starts a real node and shows what the cairn
// walkthroughs rely on: a StatefulSet's pods start in containers under
// the restricted security context with volumes a local-path provisioner
// made, the cluster DNS answers for Services and for a headless
// Service's pods (and for nothing outside the cluster), Service addresses
// route through kube-proxy, an image that is not on the node is never
// pulled from outside the machine, and a deleted claim's volume goes.
func TestRealNodeRunsPods(t *testing.T) {
	c := kubenode.Start(t)
	ctx := context.Background()
	cl := c.Client(t)
	ns := c.Namespace(t, "node-test")

	if _, err := cl.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "x", Port: 80}}, PublishNotReadyAddresses: true},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AppsV1().StatefulSets(ns).Create(ctx, statefulSet("web", kubenode.SandboxImage), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := waitPod(t, cl, ns, "web-0", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if !strings.HasPrefix(pod.Status.PodIP, "10.244.") {
		t.Errorf("pod IP %q is not in the node's pod range", pod.Status.PodIP)
	}
	pvc, err := cl.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-web-0", metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim data-web-0: %v %v", err, pvc.Status.Phase)
	}
	pv, err := cl.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil || pv.Spec.Local == nil {
		t.Fatalf("volume of data-web-0: %v %+v", err, pv.Spec.PersistentVolumeSource)
	}

	r := c.Resolver()
	kube, err := cl.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"kubernetes.default.svc.cluster.local":   kube.Spec.ClusterIP,
		"web-0.web." + ns + ".svc.cluster.local": pod.Status.PodIP,
		"web." + ns + ".svc.cluster.local":       pod.Status.PodIP,
		"kube-dns.kube-system.svc.cluster.local": c.DNSIP,
	} {
		addrs, err := lookup(r, name)
		if err != nil || len(addrs) != 1 || addrs[0] != want {
			t.Errorf("%s: %v %v, want %s", name, addrs, err, want)
		}
	}
	if addrs, err := lookup(r, "example.com"); err == nil {
		t.Errorf("example.com resolved to %v: the cluster DNS must have no upstream", addrs)
	}
	// The kubernetes Service's address routes, through kube-proxy's
	// rules in the node's namespace, to the API server.
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(kube.Spec.ClusterIP, "443"), 5*time.Second)
	if err != nil {
		t.Fatalf("the kubernetes Service does not route: %v", err)
	}
	conn.Close()

	// An image the node does not have is not pulled from anywhere.
	missing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "missing"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "ghcr.io/cairn-dev/not-on-this-node:v1"}}}}
	if _, err := cl.CoreV1().Pods(ns).Create(ctx, missing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cl, ns, "missing", func(p *corev1.Pod) bool {
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
				if !strings.Contains(w.Message, "127.0.0.1:9") {
					t.Errorf("the pull went somewhere: %s", w.Message)
				}
				return true
			}
		}
		return false
	})

	// Scaled in and its claim deleted, the volume and its folder go.
	if _, err := cl.AppsV1().StatefulSets(ns).Patch(ctx, "web", "application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cl.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data-web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cl.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		_, statErr := os.Stat(pv.Spec.Local.Path)
		if err != nil && os.IsNotExist(statErr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("volume %s not removed: %v, folder: %v", pv.Name, err, statErr)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func lookup(r *net.Resolver, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.LookupHost(ctx, name)
}

// statefulSet is one replica of image under the restricted security
// context, with a claim of the node's default StorageClass.
func statefulSet(name, image string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), ServiceName: name,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
						FSGroup: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{Name: "c", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}},
		},
	}
}

func waitPod(t *testing.T, cl kubernetes.Interface, ns, name string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := cl.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			if err == nil {
				t.Fatalf("pod %s: %+v", name, p.Status)
			}
			t.Fatalf("pod %s: %v", name, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
