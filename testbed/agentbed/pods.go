package agentbed

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
)

// OwnedByStatefulSet makes pod one the StatefulSet cluster controls, as the
// StatefulSet controller would (the runtime trusts no other pod); the
// StatefulSet, with the pod's labels as selector, is created when missing.
func OwnedByStatefulSet(t testing.TB, c kubernetes.Interface, ns, cluster string, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	sts, err := c.AppsV1().StatefulSets(ns).Get(ctx, contract.StatefulSet(cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		one := int32(1)
		sts, err = c.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: contract.StatefulSet(cluster)},
			Spec: appsv1.StatefulSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: pod.Labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: pod.Spec}}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
}
