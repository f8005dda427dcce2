package fluxbed_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-dev/cairn/testbed/fluxbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// TestRealNodeFluxAppliesAndPrunes runs real Flux on a real node with the
// example Kustomization: a commit is applied (and, with wait, only Ready
// once its StatefulSet's pod runs), and an object a later commit drops is
// pruned.
func TestRealNodeFluxAppliesAndPrunes(t *testing.T) {
	c := kubenode.Start(t)
	f := fluxbed.Start(t, c.ControlPlane)
	ctx := context.Background()
	cl := c.Client(t)
	c.Namespace(t, "databases")

	url, bare := gitbed.Serve(t, "x-access-token", "git-t0ken", map[string]string{"README.md": "gitops\n"})
	first := gitbed.Commit(t, bare, map[string]string{
		"rendered/demo/kustomization.yaml": "resources: [config.yaml, web.yaml]\n",
		"rendered/demo/config.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n",
		"rendered/demo/web.yaml":           web,
	})
	f.GitRepository(t, url, "main", "x-access-token", "git-t0ken", 2*time.Second)
	f.Kustomization(t, "demo", "databases")
	f.WaitApplied(t, "demo", first.String(), 3*time.Minute)
	if _, err := cl.CoreV1().ConfigMaps("databases").Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Fatalf("the applied ConfigMap: %v", err)
	}
	sts, err := cl.AppsV1().StatefulSets("databases").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || sts.Status.ReadyReplicas != 1 {
		t.Fatalf("Flux reported Ready before the StatefulSet was: %v %+v", err, sts.Status)
	}

	// No drift while the cluster holds what Git says; a field Git sets,
	// changed by hand, is drift: reported, and put back by the apply.
	if d := f.Drift(t, "demo", time.Minute); len(d) != 0 {
		t.Fatalf("drift right after the apply: %v", d)
	}
	if _, err := cl.CoreV1().ConfigMaps("databases").Patch(ctx, "settings", types.MergePatchType, []byte(`{"data":{"a":"by hand"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := f.Drift(t, "demo", time.Minute); len(d) != 1 || d[0] != "ConfigMap/databases/settings configured" {
		t.Fatalf("drift after a change by hand: %v, want the ConfigMap configured", d)
	}
	if cm, err := cl.CoreV1().ConfigMaps("databases").Get(ctx, "settings", metav1.GetOptions{}); err != nil || cm.Data["a"] != "b" {
		t.Fatalf("the ConfigMap after the apply: %v %v", cm.Data, err)
	}

	second := gitbed.Commit(t, bare, map[string]string{
		"rendered/demo/kustomization.yaml": "resources: [web.yaml]\n",
		"rendered/demo/config.yaml":        "",
	})
	f.WaitApplied(t, "demo", second.String(), 2*time.Minute)
	if _, err := cl.CoreV1().ConfigMaps("databases").Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the dropped ConfigMap was not pruned: %v", err)
	}
}

const web = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  replicas: 1
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: c
        image: ` + kubenode.SandboxImage + `
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`
