package etcd

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/runtime/agent"
)

// memberNode is the node a member's pod runs on, and whether it is
// cordoned.
type memberNode struct {
	Node     string
	Cordoned bool
}

// memberNodes reads the node of the leader's pod and, when it is
// cordoned (spec.unschedulable, which kubectl drain sets before it
// evicts), the other voters' nodes too (where leadership may go,
// drain.go), by member name. While the leader's node is not cordoned
// that is two requests a pass (its pod, its node); none without a
// leader. A pod that is not the StatefulSet's, not scheduled or not
// readable, or a node that cannot be read, is left out: its node is
// not known. Forbidden on nodes (a spec without a namespace renders no
// node reader) is logged once, and nothing is cordoned then: a drain
// goes as the budget alone lets it.
func (m *Membership) memberNodes(ctx context.Context, sts *appsv1.StatefulSet, seen etcdLook) map[string]memberNode {
	out := map[string]memberNode{}
	ordered := slices.DeleteFunc(slices.Clone(seen.members), func(s lookedMember) bool { return s.learner || s.name == "" })
	i := slices.IndexFunc(ordered, func(s lookedMember) bool { return s.leads })
	if i < 0 {
		return out
	}
	// The leader first: the others only when its node is cordoned.
	ordered[0], ordered[i] = ordered[i], ordered[0]
	cordoned := map[string]bool{}
	for j, s := range ordered {
		if j > 0 && !out[ordered[0].name].Cordoned {
			break
		}
		pod, err := m.Client.CoreV1().Pods(m.Namespace).Get(ctx, s.name, metav1.GetOptions{})
		if err != nil {
			m.logger().Warn("member pod not read", "member", s.name, "err", err.Error())
			continue
		}
		node := pod.Spec.NodeName
		if node == "" || !agent.OwnedBy(pod, sts) {
			continue
		}
		c, read := cordoned[node]
		if !read {
			n, err := m.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			switch {
			case apierrors.IsForbidden(err):
				if !m.nodesForbidden.Swap(true) {
					m.logger().Warn("the runtime may not read nodes: a drain of the leader's node is not seen, leadership is not moved before it (render the cluster with a namespace: docs/runtime.md, Drains)", "node", node)
				}
				return map[string]memberNode{}
			case err != nil:
				m.logger().Warn("node not read", "node", node, "err", err.Error())
				continue
			}
			c = n.Spec.Unschedulable
			cordoned[node] = c
		}
		out[s.name] = memberNode{Node: node, Cordoned: c}
	}
	return out
}
