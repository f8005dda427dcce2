package agent

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
)

// MemberPods lists the pods the runtime may treat as the cluster's members
// (app is the kind's app label value): those whose
// controller is the cluster's StatefulSet, by UID, under a member's name.
// Labels alone prove nothing: anyone who may create pods in the namespace
// can set them. A labelled pod that is not a member gets no probe (so no
// password) and is never labelled or promoted; ignored names them.
func MemberPods(ctx context.Context, c kubernetes.Interface, ns, app, cluster string) (pods []corev1.Pod, ignored []string, err error) {
	list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: memberSelector(app, cluster)})
	if err != nil {
		return nil, nil, fmt.Errorf("list members: %w", err)
	}
	sts, err := c.AppsV1().StatefulSets(ns).Get(ctx, contract.StatefulSet(cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sts = nil // no StatefulSet: no pod is a member
	} else if err != nil {
		return nil, nil, fmt.Errorf("read the StatefulSet: %w", err)
	}
	for _, p := range list.Items {
		if sts != nil && OwnedBy(&p, sts) && isMemberName(cluster, p.Name) {
			pods = append(pods, p)
		} else {
			ignored = append(ignored, p.Name)
		}
	}
	return pods, ignored, nil
}

// OwnedBy reports whether the pod's controller is sts (its UID: a
// StatefulSet deleted and made again under the same name is another).
func OwnedBy(p *corev1.Pod, sts *appsv1.StatefulSet) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "StatefulSet" && ref.APIVersion == "apps/v1" && ref.Name == sts.Name && ref.UID == sts.UID
}

func isMemberName(cluster, pod string) bool {
	_, ok := contract.MemberOrdinal(cluster, pod)
	return ok
}
