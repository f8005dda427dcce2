package testbed

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-dev/cairn/renderer"
)

// A tree with a StatefulSet of n members with claims, and a ConfigMap.
func appTree(replicas int, withConfig bool) renderer.Tree {
	resources := "- statefulset.yaml\n"
	if withConfig {
		resources += "- config.yaml\n"
	}
	return renderer.Tree{
		"rendered/app/kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" + resources),
		"rendered/app/config.yaml":        []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {a: \"1\"}\n"),
		"rendered/app/statefulset.yaml": []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: app}
spec:
  replicas: %d
  serviceName: app
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers: [{name: app, image: "example.com/app:1"}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`, replicas)),
	}
}

// readyPods checks that exactly the pods named are there, running and ready.
func readyPods(ctx context.Context, cp *ControlPlane, t *testing.T, ns string, names ...string) func() error {
	c := cp.Client(t)
	return func() error {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var got []string
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || !podReady(&p) {
				return fmt.Errorf("pod %s: %s, not ready", p.Name, p.Status.Phase)
			}
			got = append(got, p.Name)
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			return fmt.Errorf("pods %v, want %v", got, names)
		}
		return nil
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// The sync applies a folder, the StatefulSet controller makes pods and
// claims, the node runs and readies them and binds the claims; scale-in
// removes a pod; an edit by hand is drift; a removed object is pruned; a
// broken folder applies nothing.
func TestSyncAndNode(t *testing.T) {
	ctx := context.Background()
	cp := StartWith(t, Options{ControllerManager: true})
	ns := cp.Namespace(t, "sync")
	c := cp.Client(t)
	cp.StartNode(t, ns, nil)
	sync := cp.NewSync(t, ns)

	if _, err := sync.Apply(ctx, appTree(2, true)); err != nil {
		t.Fatal(err)
	}
	Eventually(t, "two pods ready", readyPods(ctx, cp, t, ns, "app-0", "app-1"))
	Eventually(t, "claims bound", func() error {
		for _, name := range []string{"data-app-0", "data-app-1"} {
			pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := pvc.Status.Capacity[corev1.ResourceStorage]; pvc.Status.Phase != corev1.ClaimBound || got.String() != "1Gi" {
				return fmt.Errorf("%s: %s %s", name, pvc.Status.Phase, got.String())
			}
		}
		return nil
	})
	if drift, err := sync.Drift(ctx); err != nil || len(drift) != 0 {
		t.Fatalf("drift after sync: %v %v", drift, err)
	}

	// An edit by hand shows as drift.
	patch := []byte(`{"data":{"a":"2"}}`)
	if _, err := c.CoreV1().ConfigMaps(ns).Patch(ctx, "app", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if drift, err := sync.Drift(ctx); err != nil || len(drift) != 1 || !strings.Contains(drift[0], "ConfigMap/sync/app") {
		t.Fatalf("drift after an edit by hand: %v %v", drift, err)
	}

	// Scale-in and a removed ConfigMap: the pod goes, the ConfigMap is pruned.
	if _, err := sync.Apply(ctx, appTree(1, false)); err != nil {
		t.Fatal(err)
	}
	Eventually(t, "one pod ready", readyPods(ctx, cp, t, ns, "app-0"))
	if _, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap not pruned: %v", err)
	}
	if drift, err := sync.Drift(ctx); err != nil || len(drift) != 0 {
		t.Fatalf("drift after the second sync: %v %v", drift, err)
	}

	// A folder that does not build applies nothing.
	broken := appTree(3, true)
	broken["rendered/app/kustomization.yaml"] = []byte("resources: [missing.yaml]\n")
	if _, err := sync.Apply(ctx, broken); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("broken folder: %v", err)
	}
	time.Sleep(time.Second)
	if err := readyPods(ctx, cp, t, ns, "app-0")(); err != nil {
		t.Fatalf("after a broken folder: %v", err)
	}

	// The folder removed from the branch: what it applied is pruned, and
	// the garbage collector and the node take its pods away.
	if _, err := sync.Apply(ctx, renderer.Tree{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().StatefulSets(ns).Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("StatefulSet not pruned: %v", err)
	}
	Eventually(t, "no pods", readyPods(ctx, cp, t, ns))
}
