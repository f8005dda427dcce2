package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-dev/cairn/planner/observe"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/reconcile/shard"
	"github.com/cairn-dev/cairn/testbed"
)

// restricted is a security context the restricted Pod Security standard
// admits, for the test's own pods.
func restricted() (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	return &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(65532)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		&corev1.SecurityContext{AllowPrivilegeEscalation: new(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

// The manifests apply on a real kube-apiserver; the Deployment's pod is
// admitted in a namespace that enforces the restricted Pod Security
// standard; and with a token of the ServiceAccount, a shard member and
// the observer do their work while everything else is refused.
func TestTheManifestsOnTheAPIServer(t *testing.T) {
	m := load(t)
	ctx := context.Background()
	cp := testbed.Start(t)
	ns := cp.Namespace(t, "cairn")
	admin := cp.Client(t)
	enforce(t, admin, ns)
	if err := cp.ServerSideApply(t, ns, m.stream, false); err != nil {
		t.Fatal(err)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cairn-reconcile-probe", Namespace: ns, Labels: m.deploy.Spec.Template.Labels},
		Spec: m.deploy.Spec.Template.Spec}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, dry); err != nil {
		t.Fatalf("the Deployment's pod under the restricted standard: %v", err)
	}
	loose := pod.DeepCopy()
	loose.Spec.Containers[0].SecurityContext = nil
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, loose, dry); err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("a pod without the container's security context: %v, want refused: is the standard enforced?", err)
	}

	sa := asServiceAccount(t, cp, admin, ns, m.sa.Name)
	t.Run("a shard member", func(t *testing.T) { memberWorks(t, admin, sa, ns) })
	t.Run("the observer", func(t *testing.T) { observerWorks(t, admin, sa, ns) })
	t.Run("nothing else", func(t *testing.T) { theRestIsRefused(t, sa, ns) })
}

// enforce has ns enforce the restricted Pod Security standard.
func enforce(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	o, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	o.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := c.CoreV1().Namespaces().Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// asServiceAccount is a client with a token of the ServiceAccount name,
// as its pods get one.
func asServiceAccount(t *testing.T, cp *testbed.ControlPlane, admin kubernetes.Interface, ns, name string) kubernetes.Interface {
	t.Helper()
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(&rest.Config{Host: cp.URL, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// memberWorks: a member takes every shard, triggers the others, and
// releases its Leases when it stops.
func memberWorks(t *testing.T, admin, sa kubernetes.Interface, ns string) {
	m, err := shard.New(shard.Config{Client: sa, Namespace: ns, ID: "r1", Shards: 4, LeaseDuration: 2 * time.Second, Log: testbed.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testbed.Eventually(t, "the member owns every shard", func() error {
		if n := len(m.Owned()); n != 4 {
			return fmt.Errorf("owns %v", m.Owned())
		}
		return nil
	})
	if err := m.Notify(ctx); err != nil {
		t.Fatalf("notify: %v", err)
	}
	cancel()
	<-done
	leases, err := admin.CoordinationV1().Leases(ns).List(context.Background(), metav1.ListOptions{LabelSelector: shard.LabelLease})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if h := l.Spec.HolderIdentity; l.Name != "cairn-trigger" && h != nil && *h != "" {
			t.Errorf("lease %s still held by %s after the member stopped", l.Name, *h)
		}
	}
}

// observerWorks: the observer reads a cluster, its pods and claims, and
// its runtime's Deployment.
func observerWorks(t *testing.T, admin, sa kubernetes.Interface, ns string) {
	ctx := context.Background()
	labels := map[string]string{"app.kubernetes.io/instance": "kv", "app.kubernetes.io/name": "etcd"}
	psc, sc := restricted()
	podSpec := corev1.PodSpec{SecurityContext: psc, Containers: []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.7.3", SecurityContext: sc}}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "kv"}, Spec: appsv1.StatefulSetSpec{Replicas: new(int32(1)),
		Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: "kv",
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec}}}
	if _, err := admin.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its runtime, read-only: the observer reads its Deployment.
	rlabels := map[string]string{"app.kubernetes.io/instance": "kv", "app.kubernetes.io/name": "cairn-runtime"}
	rsc := *sc
	rsc.ReadOnlyRootFilesystem = new(true)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "kv-runtime"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: rlabels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: rlabels}, Spec: corev1.PodSpec{SecurityContext: psc,
			Containers: []corev1.Container{{Name: "runtime", Image: "ghcr.io/cairn-dev/cairn:v0.1.0", SecurityContext: &rsc}}}}}}
	if _, err := admin.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kv-0", Labels: labels}, Spec: podSpec}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clusters, err := spec.Decode("kv.yaml", []byte("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: kv\nspec:\n  size: 1\n  version: \"3.7.3\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := &observe.Observer{Client: sa, Namespace: ns, Kinds: []observe.Kind{observe.Etcd(), observe.Postgres()}}
	snap, err := o.Observe(ctx, clusters)
	if err != nil {
		t.Fatalf("observe as the ServiceAccount: %v", err)
	}
	if len(snap.Clusters) != 1 || len(snap.Clusters[0].Members) != 1 || snap.Clusters[0].StatefulSet.Version != "3.7.3" || !snap.Clusters[0].Runtime.ReadOnlyRoot {
		t.Fatalf("observed %+v", snap.Clusters)
	}
}

// theRestIsRefused: no write but Leases', no Secret, no other namespace.
func theRestIsRefused(t *testing.T, sa kubernetes.Interface, ns string) {
	ctx := context.Background()
	for _, c := range []struct {
		what string
		call func() error
	}{
		{"delete a pod", func() error { return sa.CoreV1().Pods(ns).Delete(ctx, "kv-0", metav1.DeleteOptions{}) }},
		{"create a pod", func() error {
			_, err := sa.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}},
		{"read a Secret", func() error {
			_, err := sa.CoreV1().Secrets(ns).Get(ctx, "cairn-reconcile", metav1.GetOptions{})
			return err
		}},
		{"list Secrets", func() error { _, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); return err }},
		{"update a StatefulSet", func() error {
			s, err := sa.AppsV1().StatefulSets(ns).Get(ctx, "kv", metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get: %w", err)
			}
			_, err = sa.AppsV1().StatefulSets(ns).Update(ctx, s, metav1.UpdateOptions{})
			return err
		}},
		{"create a ConfigMap", func() error {
			_, err := sa.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}},
		{"delete a Lease", func() error {
			return sa.CoordinationV1().Leases(ns).Delete(ctx, "cairn-shard-0", metav1.DeleteOptions{})
		}},
		{"watch Leases", func() error {
			w, err := sa.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{"list Leases in another namespace", func() error {
			_, err := sa.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
			return err
		}},
		{"create a Lease in another namespace", func() error {
			_, err := sa.CoordinationV1().Leases("default").Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}},
		{"list pods in another namespace", func() error { _, err := sa.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); return err }},
	} {
		if err := c.call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as the ServiceAccount: %v, want forbidden", c.what, err)
		}
	}
}
