package observe

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/live"
)

// deployRuntime creates a cluster's runtime Deployment as the renderer
// writes it (with its memory request and limit), its container's root
// read-only or not.
func deployRuntime(t *testing.T, c kubernetes.Interface, ns, cluster string, readOnly *bool) {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/instance": cluster, "app.kubernetes.io/name": "cairn-runtime"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-runtime"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "runtime", Image: "ghcr.io/cairn-dev/cairn:v0.1.0",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: readOnly},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
		}}}},
	}}
	if _, err := c.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Only the runtime container's own read-only root and memory limit
// count; a missing context or field reads as writable, a missing limit
// as none, as cairn rendered them before.
func TestRuntimeOf(t *testing.T) {
	ro := &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(true)}
	limited := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}
	cases := []struct {
		name       string
		containers []corev1.Container
		want       live.Runtime
	}{
		{"read-only", []corev1.Container{{Name: "runtime", SecurityContext: ro, Resources: limited}}, live.Runtime{ReadOnlyRoot: true}},
		{"rendered before", []corev1.Container{{Name: "runtime", SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false)}}}, live.Runtime{NoMemoryLimit: true}},
		{"set to false", []corev1.Container{{Name: "runtime", SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(false)}, Resources: limited}}, live.Runtime{}},
		{"no security context", []corev1.Container{{Name: "runtime", Resources: limited}}, live.Runtime{}},
		{"another container's", []corev1.Container{{Name: "sidecar", SecurityContext: ro, Resources: limited}, {Name: "runtime"}}, live.Runtime{NoMemoryLimit: true}},
		{"read-only, no memory limit", []corev1.Container{{Name: "runtime", SecurityContext: ro}}, live.Runtime{ReadOnlyRoot: true, NoMemoryLimit: true}},
		{"a memory request only", []corev1.Container{{Name: "runtime", SecurityContext: ro, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}}, live.Runtime{ReadOnlyRoot: true, NoMemoryLimit: true}},
		{"a CPU limit only", []corev1.Container{{Name: "runtime", SecurityContext: ro, Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}, live.Runtime{ReadOnlyRoot: true, NoMemoryLimit: true}},
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
