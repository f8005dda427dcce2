package shard

import (
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newLease is a Lease of the fleet not created: family is "shard",
// "replica" or "trigger" (its LabelLease value).
func newLease(name, namespace, family string) *coordv1.Lease {
	return &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
		Labels: map[string]string{LabelLease: family, contract.LabelManagedBy: contract.ManagedByCairn}}}
}

// claimed is l held by identity for d from now: a renewal when identity
// held it, else a transition (acquireTime now, leaseTransitions one more).
// shardMap, when set, is written on the Lease (a replica slot's).
func claimed(l *coordv1.Lease, identity string, d time.Duration, now time.Time, shardMap string) *coordv1.Lease {
	out := l.DeepCopy()
	at := metav1.NewMicroTime(now)
	if holder(out) != identity {
		out.Spec.AcquireTime = &at
		if holder(out) != "" || out.Spec.LeaseTransitions != nil {
			out.Spec.LeaseTransitions = new(transitions(out) + 1)
		}
	}
	out.Spec.HolderIdentity = new(identity)
	out.Spec.RenewTime = &at
	out.Spec.LeaseDurationSeconds = new(int32(d / time.Second))
	if shardMap != "" {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[AnnotationMap] = shardMap
	}
	return out
}

// released is l given up: no holder, so another replica may take it at
// once.
func released(l *coordv1.Lease, now time.Time) *coordv1.Lease {
	out := l.DeepCopy()
	at := metav1.NewMicroTime(now)
	out.Spec.HolderIdentity = new("")
	out.Spec.RenewTime = &at
	return out
}

func holder(l *coordv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func transitions(l *coordv1.Lease) int32 {
	if l.Spec.LeaseTransitions == nil {
		return 0
	}
	return *l.Spec.LeaseTransitions
}

// duration is the Lease's leaseDurationSeconds; fallback when it has
// none (a Lease not written by a replica).
func duration(l *coordv1.Lease, fallback time.Duration) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0 {
		return fallback
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}
