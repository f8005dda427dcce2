package argobed_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/argobed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// TestRealNodeArgoCDSyncsAndReportsDrift runs real Argo CD on a real
// node with the example Application: a commit is synced and reported
// Synced and Healthy (Healthy only once its StatefulSet's pod runs and
// its volume is bound); a hand edit of the StatefulSet is reported
// OutOfSync by Argo CD's own comparison, naming the StatefulSet, and
// self-heal puts it back; an object a later commit drops is pruned.
// Then examples/argocd/applicationset.yaml, with the real
// applicationset-controller, makes an Application per cluster folder.
func TestRealNodeArgoCDSyncsAndReportsDrift(t *testing.T) {
	c := kubenode.Start(t)
	a := argobed.Start(t, c.ControlPlane)
	ctx := context.Background()
	cl := c.Client(t)
	c.Namespace(t, "databases")

	url, bare := gitbed.Serve(t, "x-access-token", "git-t0ken", map[string]string{"README.md": "gitops\n"})
	first := gitbed.Commit(t, bare, map[string]string{
		"rendered/demo/kustomization.yaml": "resources: [config.yaml, web.yaml]\n",
		"rendered/demo/config.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n",
		"rendered/demo/web.yaml":           web,
	})
	a.Repository(t, url, "x-access-token", "git-t0ken")
	a.Application(t, "demo", url, "databases")
	a.WaitSynced(t, "demo", first.String(), 3*time.Minute)
	settled := func(when string) {
		t.Helper()
		testbed.EventuallyWithin(t, 3*time.Minute, "Argo CD reports demo Synced and Healthy "+when, func() error {
			if s := a.Drift(t, "demo", time.Minute); !s.Settled() {
				return fmt.Errorf("%s", s)
			}
			return nil
		})
	}
	settled("after the first commit")
	sts, err := cl.AppsV1().StatefulSets("databases").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || sts.Status.ReadyReplicas != 1 {
		t.Fatalf("Argo CD reported Healthy before the StatefulSet was: %v %+v", err, sts.Status)
	}

	// A field Git sets, changed by hand, is drift Argo CD reports (with
	// self-heal off, so that the report is seen before the repair), and
	// self-heal puts Git's value back. (A field Git does not set, added
	// by hand, is no drift under server-side apply: the apply would
	// leave it.)
	a.SelfHeal(t, "demo", false)
	if _, err := cl.AppsV1().StatefulSets("databases").Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"example.com/owner":"hand"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	s := a.Drift(t, "demo", time.Minute)
	if s.Sync != argobed.OutOfSync || len(s.NotSynced) != 1 || s.NotSynced[0] != "StatefulSet/databases/web OutOfSync" {
		t.Fatalf("after a hand edit of the StatefulSet Argo CD reports %s; want OutOfSync naming only the StatefulSet", s)
	}
	a.SelfHeal(t, "demo", true)
	settled("after self-heal")
	sts, err = cl.AppsV1().StatefulSets("databases").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || sts.Annotations["example.com/owner"] != "git" {
		t.Fatalf("the hand edit is still there after self-heal: %v %v", err, sts.Annotations)
	}

	second := gitbed.Commit(t, bare, map[string]string{
		"rendered/demo/kustomization.yaml": "resources: [web.yaml]\n",
		"rendered/demo/config.yaml":        "",
	})
	a.WaitSynced(t, "demo", second.String(), 2*time.Minute)
	testbed.Eventually(t, "the dropped ConfigMap pruned", func() error {
		if _, err := cl.CoreV1().ConfigMaps("databases").Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	settled("after the prune")

	// The health check cairn ships (examples/argocd/argocd-cm.yaml, which
	// Start installs): a budget of cairn's that keeps a primary no pod is
	// labelled with is Degraded, though every pod of the StatefulSet is
	// ready (Argo CD's own checks would say Healthy); once the pod is
	// labelled primary, as cairn's runtime labels it, Healthy. A budget
	// that is not cairn's and is short of pods stays Healthy, as Argo
	// CD's built-in check judges it. Labels on pods are no drift.
	withBudgets := gitbed.Commit(t, bare, map[string]string{
		"rendered/demo/kustomization.yaml": "resources: [web.yaml, budgets.yaml]\n",
		"rendered/demo/budgets.yaml":       budgets,
	})
	a.WaitSynced(t, "demo", withBudgets.String(), 2*time.Minute)
	testbed.EventuallyWithin(t, 2*time.Minute, "Argo CD reports demo Degraded: no pod is the primary its cairn budget keeps", func() error {
		if s := a.Drift(t, "demo", time.Minute); s.Sync != argobed.Synced || s.Health != "Degraded" || len(s.NotSynced) > 0 {
			return fmt.Errorf("%s", s)
		}
		return nil
	})
	if _, err := cl.CoreV1().Pods("databases").Patch(ctx, "web-0", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"cairn.dev/role":"primary"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	settled("once web-0 is labelled primary")

	// The same node, one ApplicationSet for every cluster: the hand-made
	// Application goes (no finalizer: what it synced stays) and the
	// example's git directory generator makes one per folder of
	// rendered/, demo's among them; a folder added gets its Application,
	// synced; a folder removed loses it, and what it synced stays.
	a.Delete(t, "demo")
	a.StartApplicationSets(t)
	a.ApplicationSet(t, url, "databases")
	third := gitbed.Commit(t, bare, map[string]string{
		"rendered/other/kustomization.yaml": "resources: [config.yaml]\n",
		"rendered/other/config.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {c: d}\n",
	})
	testbed.EventuallyWithin(t, 2*time.Minute, "an Application per folder of rendered/", func() error {
		if got := strings.Join(a.Names(t), ","); got != "demo,other" {
			return fmt.Errorf("Applications %s", got)
		}
		return nil
	})
	for _, app := range []string{"demo", "other"} {
		a.WaitSynced(t, app, third.String(), 2*time.Minute)
	}
	if cm, err := cl.CoreV1().ConfigMaps("databases").Get(ctx, "other", metav1.GetOptions{}); err != nil || cm.Data["c"] != "d" {
		t.Fatalf("the ConfigMap of the generated Application: %v %v", err, cm)
	}
	settled("under the ApplicationSet")
	gitbed.Commit(t, bare, map[string]string{"rendered/other": ""})
	testbed.EventuallyWithin(t, 2*time.Minute, "the removed folder's Application gone", func() error {
		if got := strings.Join(a.Names(t), ","); got != "demo" {
			return fmt.Errorf("Applications %s", got)
		}
		return nil
	})
	if _, err := cl.CoreV1().ConfigMaps("databases").Get(ctx, "other", metav1.GetOptions{}); err != nil {
		t.Fatalf("the removed Application's ConfigMap: %v", err)
	}
}

// budgets are a budget as cairn renders one for a PostgreSQL primary
// (labelled managed-by cairn, keeping one pod of role primary) and one of
// somebody else's that no pod can satisfy.
var budgets = strings.TrimSpace(`
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web-primary
  labels: {app.kubernetes.io/managed-by: cairn}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web, cairn.dev/role: primary}}
  unhealthyPodEvictionPolicy: AlwaysAllow
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: elsewhere}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: nothing-runs-this}}
`) + "\n"

// web is a StatefulSet with a volume, its claim template written as
// cairn's renderer writes it (apiVersion and kind included).
var web = strings.TrimSpace(`
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, annotations: {example.com/owner: git}}
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
        image: `+kubenode.SandboxImage+`
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`) + "\n"
