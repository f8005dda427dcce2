package etcd

import (
	"context"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// memberRoles are the role labels the members' pods are to carry, by pod
// name: contract.RoleLeader on the leader's, contract.RoleFollower on
// every other started member's. The leader's label is what its own
// disruption budget keeps (renderer/disruption.go): a drain of its node
// waits until leadership has moved (drainMove) and the labels with it. A
// leader whose node is cordoned and that cannot hand over (drainMove
// waits: no healthy voter on an uncordoned node, a membership change in
// flight, etcd before 3.3) is labelled a follower: its budget would hold
// the drain for ever, and a leader that stops costs an election, not the
// quorum, which the others' budget keeps. So is a leader when the
// runtime may not read nodes (seesDrains false: no node reader rendered),
// as it would never see the drain to hand over for. With no leader (an
// election under way) it says nothing, and the labels stay as they are.
func memberRoles(v view, seesDrains bool) map[string]string {
	leader := -1
	for i, m := range v.Members {
		if m.Leader && !m.Learner {
			leader = i
		}
	}
	if leader < 0 {
		return nil
	}
	holds := seesDrains
	if a, ok := v.drainMove(); ok && a.Kind == actNone {
		holds = false
	}
	out := map[string]string{}
	for i, m := range v.Members {
		if m.Name == "" || m.Stray {
			continue
		}
		out[m.Name] = contract.RoleFollower
		if i == leader && holds {
			out[m.Name] = contract.RoleLeader
		}
	}
	return out
}

// keepRoles labels the StatefulSet's member pods with their roles
// (memberRoles), patching only a pod whose label differs, under the
// resourceVersion listed: one list of the cluster's pods a pass. A pod
// being deleted is left alone. A refusal of the patch (a Role rendered
// before the runtime labelled etcd pods) is logged once; any other
// failure is logged and never the pass's error: the labels serve drains,
// and the next pass tries again.
func (m *Membership) keepRoles(ctx context.Context, sts *appsv1.StatefulSet, want map[string]string) {
	if len(want) == 0 {
		return
	}
	sel := labels.SelectorFromSet(contract.Selector(contract.AppEtcd, m.Cluster)).String()
	pods, err := m.Client.CoreV1().Pods(m.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		m.logger().Warn("member pods not listed for their role labels", "err", err.Error())
		return
	}
	for _, p := range pods.Items {
		role, ok := want[p.Name]
		if !ok || p.Labels[contract.LabelRole] == role || p.DeletionTimestamp != nil || !agent.OwnedBy(&p, sts) {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": p.ResourceVersion, "labels": map[string]string{contract.LabelRole: role}}})
		if err != nil {
			continue
		}
		_, err = m.Client.CoreV1().Pods(m.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: contract.FieldManager})
		switch {
		case apierrors.IsForbidden(err):
			if !m.rolesForbidden.Swap(true) {
				m.logger().Warn("the runtime may not label its members: a drain of the leader's node does not wait for leadership to move (render the cluster anew: docs/runtime.md, Drains)", "pod", p.Name, "err", err.Error())
			}
			return
		case err != nil:
			m.logger().Warn("role label not set", "pod", p.Name, "role", role, "err", err.Error())
		default:
			m.logger().Info("role label set", "pod", p.Name, "role", role)
		}
	}
}
