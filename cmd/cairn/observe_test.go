package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/testbed"
)

// cairn plan reads the live state from a real API server.
func TestPlanWithKubeconfig(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	c := cp.Client(t)
	ns := cp.Namespace(t, "db")
	ctx := context.Background()
	sel := map[string]string{"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "my-etcd-cluster"}
	three := int32(3)
	container := corev1.Container{Name: "etcd", Image: "quay.io/coreos/etcd:v3.2.13"}
	_, err := c.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "my-etcd-cluster"},
		Spec: appsv1.StatefulSetSpec{Replicas: &three, Selector: &metav1.LabelSelector{MatchLabels: sel}, ServiceName: "my-etcd-cluster",
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{Containers: []corev1.Container{container}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Its runtime runs with a read-only root and a memory limit: observe
	// reads them, and the replayed plan below has them too.
	rsel := map[string]string{"app.kubernetes.io/name": "cairn-runtime", "app.kubernetes.io/instance": "my-etcd-cluster"}
	_, err = c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "my-etcd-cluster-runtime"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: rsel}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: rsel},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "runtime", Image: "ghcr.io/cairn-dev/cairn:v0.1.0",
				SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: new(true)},
				Resources:       corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"my-etcd-cluster-0", "my-etcd-cluster-1", "my-etcd-cluster-2"} {
		pod, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sel},
			Spec: corev1.PodSpec{Containers: []corev1.Container{container}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := corev1.ConditionTrue
		if i == 2 {
			ready = corev1.ConditionFalse // a member that goes not-ready shows up as such
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "my-etcd-cluster-cairn-status"},
		Data: map[string]string{"etcd.json": `{"clusterVersion":"3.2","quorum":true,"members":[{"name":"my-etcd-cluster-0","leader":true,"healthy":true},{"name":"my-etcd-cluster-1","healthy":true},{"name":"my-etcd-cluster-2","healthy":true}]}`}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc := cp.Kubeconfig(t)
	code, out, errOut := cairn(t, "plan", "--repo", "../../examples/fleet", "--kubeconfig", kc, "--namespace", ns)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "EtcdCluster/my-etcd-cluster  waiting") || !strings.Contains(out, "my-etcd-cluster-2 is ready") ||
		!strings.Contains(out, "PostgresCluster/my-production-db  2 step(s)") {
		t.Fatalf("plan:\n%s", out)
	}
	if code, _, errOut := cairn(t, "plan", "--repo", "../../examples/fleet", "--kubeconfig", kc, "--live", "x"); code != exitUsage || !strings.Contains(errOut, "give one") {
		t.Errorf("both sources: exit %d %s", code, errOut)
	}

	// cairn observe writes what --live reads: the replayed plan is the
	// live plan, byte for byte.
	for _, format := range []string{"yaml", "json"} {
		code, snap, errOut := cairn(t, "observe", "--repo", "../../examples/fleet", "--kubeconfig", kc, "--context", "testbed", "--namespace", ns, "-o", format)
		if code != exitOK {
			t.Fatalf("observe -o %s: exit %d: %s", format, code, errOut)
		}
		if !strings.Contains(snap, "readOnlyRootFilesystem") {
			t.Fatalf("observe -o %s: no runtime read-only root in\n%s", format, snap)
		}
		file := filepath.Join(t.TempDir(), "live."+format)
		if err := os.WriteFile(file, []byte(snap), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, o := range []string{"table", "json"} {
			_, fromCluster, _ := cairn(t, "plan", "--repo", "../../examples/fleet", "--kubeconfig", kc, "--namespace", ns, "-o", o)
			code, replayed, errOut := cairn(t, "plan", "--repo", "../../examples/fleet", "--live", file, "-o", o)
			if code != exitOK || replayed != fromCluster {
				t.Fatalf("observe -o %s replayed with plan -o %s: exit %d %s\n%s\nwant\n%s", format, o, code, errOut, replayed, fromCluster)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", kc, "--context", "nope"}, "nope"},
		{[]string{"--context", "testbed"}, "give --kubeconfig or --in-cluster"},
		{[]string{"--kubeconfig", kc, "--in-cluster"}, "give one"},
		{[]string{"--kubeconfig", kc, "-o", "table"}, "-o must be yaml or json"},
	} {
		args := append([]string{"observe", "--repo", "../../examples/fleet"}, c.args...)
		if code, _, errOut := cairn(t, args...); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d %s", c.args, code, errOut)
		}
	}
}
