package reconcile

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/testbed"
)

// The chart's objects, monitoring and admission policy included, pass a
// server-side dry run on a real kube-apiserver (schemas, defaults, the
// Prometheus Operator's CRDs), as examples/install's do, with nothing
// stored; and the Deployment's pod is admitted under the restricted Pod
// Security standard.
func TestTheChartOnTheAPIServer(t *testing.T) {
	cp := testbed.StartWith(t, testbed.Options{WithoutRuntimePolicy: true})
	cp.InstallCRD(t, "monitoring.coreos.com_podmonitors.yaml")
	cp.InstallCRD(t, "monitoring.coreos.com_prometheusrules.yaml")
	ns := cp.Namespace(t, cairnNS)
	cp.Namespace(t, databasesNS)
	admin := cp.Client(t)
	enforce(t, admin, ns)

	for _, c := range []struct {
		name   string
		stream func(t *testing.T) []byte
	}{
		{"helm template charts/cairn", func(t *testing.T) []byte {
			stream, err := helmTemplate(t, ns, "--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.prometheusRule.enabled=true")
			if err != nil {
				t.Fatal(err)
			}
			return stream
		}},
		{"kustomize build examples/install", installExample},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := cp.ServerSideApply(t, ns, c.stream(t), true); err != nil {
				t.Fatalf("server-side dry run: %v", err)
			}
		})
	}
	ctx := context.Background()
	if l, err := admin.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("Roles after the dry runs: %v, %v: want none stored", l, err)
	}

	stream, err := helmTemplate(t, ns)
	if err != nil {
		t.Fatal(err)
	}
	for id, o := range objects(t, stream) {
		if o.obj["kind"] != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		strict(t, o.doc, &d)
		// The pod runs as the chart's ServiceAccount, which the dry
		// runs did not store.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: d.Spec.Template.Spec.ServiceAccountName}}
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cairn-reconcile-chart", Namespace: ns, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("%s's pod under the restricted standard: %v", id, err)
		}
	}
}
