package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
)

// Event is one Event the runtime records on the cluster's StatefulSet.
type Event struct {
	Type, Reason, Message string
}

// RecordEvents records evs on the cluster's StatefulSet sts: the
// runtime's one Event writer, for every kind.
func RecordEvents(ctx context.Context, c kubernetes.Interface, sts *appsv1.StatefulSet, at time.Time, evs []Event) error {
	var errs []error
	for i, e := range evs {
		now := metav1.NewTime(at)
		ev := &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: sts.Name + "." + strconv.FormatInt(now.UnixNano()+int64(i), 16), Namespace: sts.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", APIVersion: "apps/v1", Name: sts.Name,
				Namespace: sts.Namespace, UID: sts.UID, ResourceVersion: sts.ResourceVersion},
			Type: e.Type, Reason: e.Reason, Message: e.Message, Count: 1,
			FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: contract.AppRuntime},
		}
		if _, err := c.CoreV1().Events(sts.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("record event %s: %w", e.Reason, err))
		}
	}
	return errors.Join(errs...)
}

// RecordClusterEvent records ev on the cluster's StatefulSet, read first
// (a bare reference when it cannot be read).
func RecordClusterEvent(ctx context.Context, c kubernetes.Interface, namespace, cluster string, at time.Time, ev Event) error {
	sts, err := c.AppsV1().StatefulSets(namespace).Get(ctx, contract.StatefulSet(cluster), metav1.GetOptions{})
	if err != nil {
		sts = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: contract.StatefulSet(cluster), Namespace: namespace}}
	}
	return RecordEvents(ctx, c, sts, at, []Event{ev})
}
