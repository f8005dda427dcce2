package postgres

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
)

// drainingNodes reads the node of the pod labelled primary and, when it
// is cordoned (spec.unschedulable, which kubectl drain sets before it
// evicts), the other members' nodes too (where a drain's switchover may
// go); it names, for each member whose node is cordoned, that node
// (drain.go). While no primary's node is cordoned that is one request a
// read, at most. A node that cannot be read
// counts as not draining: a drain is then what it was without this (the
// primary's budget holds its eviction, the drain's timeout ends it), and
// failovers never wait on nodes. Forbidden (a spec without a namespace
// renders no node reader) is logged once.
func (r *Roles) drainingNodes(ctx context.Context, pods []corev1.Pod) map[string]string {
	out := map[string]string{}
	cordoned := map[string]bool{}
	// The primary's pod first: the others only when its node is cordoned.
	ordered := slices.Clone(pods)
	slices.SortStableFunc(ordered, func(a, b corev1.Pod) int {
		return boolCmp(a.Labels[contract.LabelRole] != contract.RolePrimary, b.Labels[contract.LabelRole] != contract.RolePrimary)
	})
	for i, p := range ordered {
		node := p.Spec.NodeName
		if i > 0 && len(out) == 0 {
			break // the primary's node is not cordoned, or there is no primary labelled
		}
		if node == "" {
			continue
		}
		c, seen := cordoned[node]
		if !seen {
			n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			switch {
			case apierrors.IsForbidden(err):
				if !r.nodesForbidden {
					r.logger().Warn("the runtime may not read nodes: a drain of the primary's node is not seen, no switchover before it (render the cluster with a namespace: docs/runtime.md, Drains)", "node", node)
				}
				r.nodesForbidden = true
				return out
			case err != nil:
				r.logger().Warn("node not read", "node", node, "err", err.Error())
			default:
				c = n.Spec.Unschedulable
			}
			cordoned[node] = c
		}
		if c {
			out[p.Name] = node
		}
	}
	return out
}

// cleanStops reads the members' clean stops (contract.StopsConfigMap),
// creating the ConfigMap when there is none, so the members can record
// theirs; ok says it exists now. A ConfigMap that cannot be read holds
// no stop: the failover timer runs as for any primary that is down.
func (r *Roles) cleanStops(ctx context.Context) (stops map[string]pgCleanStop, ok bool) {
	name := contract.StopsConfigMap(r.Cluster)
	cm, err := r.Client.CoreV1().ConfigMaps(r.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			Labels: map[string]string{contract.LabelManagedBy: contract.ManagedByCairn}}}
		if _, err := r.Client.CoreV1().ConfigMaps(r.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: r.fieldManager()}); err != nil && !apierrors.IsAlreadyExists(err) {
			r.logger().Warn("clean-stops ConfigMap not created", "configmap", name, "err", err.Error())
			return nil, false
		}
		return nil, true
	}
	if err != nil {
		r.logger().Warn("clean stops not read", "configmap", name, "err", err.Error())
		return nil, false
	}
	stops, errs := decodeCleanStops(cm.Data)
	for _, e := range errs {
		r.logger().Warn("clean stop not read", "configmap", name, "err", fmt.Sprint(e))
	}
	return stops, true
}

// allUp: every member probed answers. Clean stops matter only when one
// does not (cleanHandOver), so a steady cluster's reads skip them.
func allUp(probes map[string]pgProbe) bool {
	for _, pr := range probes {
		if pr.Reach != reachUp {
			return false
		}
	}
	return true
}
