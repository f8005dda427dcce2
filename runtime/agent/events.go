package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
)

// event is one Event the runtime records on the cluster's StatefulSet.
type event struct {
	Type, Reason, Message string
}

// The Events' reasons.
const (
	ReasonMemberAdded    = "MemberAdded"
	ReasonMemberPromoted = "MemberPromoted"
	ReasonLeaderMoved    = "LeaderMoved"
	ReasonMemberRemoved  = "MemberRemoved"
	ReasonMemberReplaced = "MemberReplacing"
	ReasonQuorumLost     = "QuorumLost"
	ReasonQuorumRestored = "QuorumRestored"
	// ReasonPeerURLMovedToTLS: a member that requires TLS from its peers
	// is advertised at its https peer URL.
	ReasonPeerURLMovedToTLS = "PeerURLMovedToTLS"
)

// events are the Events of a pass (pure): members that joined since the
// last status (as seen before the pass acted), the change made, and quorum
// lost or restored. A quorum never seen (a cluster being created) is not
// reported lost.
func events(prev *etcdStatus, st etcdStatus, before etcdLook, a action, changed bool) []event {
	var out []event
	if prev != nil && before.listed {
		for _, m := range before.members {
			id := strconv.FormatUint(m.id, 16)
			if slices.ContainsFunc(prev.Members, func(p etcdMember) bool { return p.ID == id }) {
				continue
			}
			name, kind := m.name, "a voting member"
			if name == "" {
				name = fmt.Sprint(m.peerURLs)
			}
			if m.learner {
				kind = "a learner"
			}
			out = append(out, event{corev1.EventTypeNormal, ReasonMemberAdded, fmt.Sprintf("%s joined as %s (id %s)", name, kind, id)})
		}
	}
	if changed {
		out = append(out, changeEvent(a))
	}
	switch {
	case prev != nil && prev.Quorum && !st.Quorum:
		out = append(out, event{corev1.EventTypeWarning, ReasonQuorumLost, st.Message})
	case prev != nil && prev.QuorumLostAt != "" && st.Quorum:
		out = append(out, event{corev1.EventTypeNormal, ReasonQuorumRestored, fmt.Sprintf("quorum is back (lost at %s)", prev.QuorumLostAt)})
	}
	return out
}

func changeEvent(a action) event {
	switch {
	case a.Kind == actPromote:
		return event{corev1.EventTypeNormal, ReasonMemberPromoted, fmt.Sprintf("promoted learner %s to a voting member", a.Member.Name)}
	case a.Kind == actMoveLeader:
		return event{corev1.EventTypeNormal, ReasonLeaderMoved, fmt.Sprintf("moved leadership from %s to %s: %s", a.Member.Name, a.To.Name, a.Why)}
	case a.Replace:
		return event{corev1.EventTypeWarning, ReasonMemberReplaced, fmt.Sprintf("removed %s (id %x): %s", a.Member.Name, a.Member.ID, a.Why)}
	}
	return event{corev1.EventTypeNormal, ReasonMemberRemoved, fmt.Sprintf("removed %s (id %x): %s", a.Member.Name, a.Member.ID, a.Why)}
}

// emit records the events on the StatefulSet.
func (m *Membership) emit(ctx context.Context, sts *appsv1.StatefulSet, evs []event) error {
	return recordEvents(ctx, m.Client, sts, m.clock(), evs)
}

// recordEvents records evs on the cluster's StatefulSet sts: the
// runtime's one Event writer.
func recordEvents(ctx context.Context, c kubernetes.Interface, sts *appsv1.StatefulSet, at time.Time, evs []event) error {
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

// recordClusterEvent records ev on the cluster's StatefulSet, read first
// (a bare reference when it cannot be read).
func recordClusterEvent(ctx context.Context, c kubernetes.Interface, namespace, cluster string, at time.Time, ev event) error {
	sts, err := c.AppsV1().StatefulSets(namespace).Get(ctx, contract.StatefulSet(cluster), metav1.GetOptions{})
	if err != nil {
		sts = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: contract.StatefulSet(cluster), Namespace: namespace}}
	}
	return recordEvents(ctx, c, sts, at, []event{ev})
}
