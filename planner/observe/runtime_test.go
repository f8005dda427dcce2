package observe

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/live"
)

// deployRuntime creates a cluster's runtime Deployment as the renderer
// writes it, its container's root read-only or not.
func deployRuntime(t *testing.T, c kubernetes.Interface, ns, cluster string, readOnly *bool) {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/instance": cluster, "app.kubernetes.io/name": "cairn-runtime"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-runtime"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "runtime", Image: "ghcr.io/cairn-dev/cairn:v0.1.0",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: readOnly},
		}}}},
	}}
	if _, err := c.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Only the runtime container's own read-only root counts; a missing
// context or field reads as writable, as cairn rendered it before.
func TestRuntimeOf(t *testing.T) {
	ro := &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(true)}
	cases := []struct {
		name       string
		containers []corev1.Container
		want       live.Runtime
	}{
		{"read-only", []corev1.Container{{Name: "runtime", SecurityContext: ro}}, live.Runtime{ReadOnlyRoot: true}},
		{"rendered before", []corev1.Container{{Name: "runtime", SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false)}}}, live.Runtime{}},
		{"set to false", []corev1.Container{{Name: "runtime", SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(false)}}}, live.Runtime{}},
		{"no security context", []corev1.Container{{Name: "runtime"}}, live.Runtime{}},
		{"another container's", []corev1.Container{{Name: "sidecar", SecurityContext: ro}, {Name: "runtime"}}, live.Runtime{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: tc.containers}}}}
			if got := runtimeOf(d); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
