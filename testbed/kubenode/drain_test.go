package kubenode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a drain evicts, as kubectl drain --ignore-daemonsets does: every
// pod but a mirror pod, a DaemonSet's and one that has ended.
func TestDrained(t *testing.T) {
	controlled := func(kind string) corev1.Pod {
		yes := true
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: &yes}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	mirror := controlled("Node")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	done := controlled("Job")
	done.Status.Phase = corev1.PodSucceeded
	failed := controlled("ReplicaSet")
	failed.Status.Phase = corev1.PodFailed
	notController := corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "x"}}}}
	for _, c := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"a StatefulSet's member", controlled("StatefulSet"), true},
		{"a ReplicaSet's pod", controlled("ReplicaSet"), true},
		{"a pod of no controller", corev1.Pod{}, true},
		{"owned by a DaemonSet that does not control it", notController, true},
		{"a DaemonSet's pod", controlled("DaemonSet"), false},
		{"a mirror pod", mirror, false},
		{"a pod that succeeded", done, false},
		{"a pod that failed", failed, false},
	} {
		if got := drained(c.pod); got != c.want {
			t.Errorf("%s: drained %v, want %v", c.name, got, c.want)
		}
	}
}
