package etcd

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/runtime/agent"
)

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
func events(prev *etcdStatus, st etcdStatus, before etcdLook, a action, changed bool) []agent.Event {
	var out []agent.Event
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
			out = append(out, agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonMemberAdded, Message: fmt.Sprintf("%s joined as %s (id %s)", name, kind, id)})
		}
	}
	if changed {
		out = append(out, changeEvent(a))
	}
	switch {
	case prev != nil && prev.Quorum && !st.Quorum:
		out = append(out, agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonQuorumLost, Message: st.Message})
	case prev != nil && prev.QuorumLostAt != "" && st.Quorum:
		out = append(out, agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonQuorumRestored, Message: fmt.Sprintf("quorum is back (lost at %s)", prev.QuorumLostAt)})
	}
	return out
}

func changeEvent(a action) agent.Event {
	switch {
	case a.Kind == actPromote:
		return agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonMemberPromoted, Message: fmt.Sprintf("promoted learner %s to a voting member", a.Member.Name)}
	case a.Kind == actMoveLeader:
		return agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonLeaderMoved, Message: fmt.Sprintf("moved leadership from %s to %s: %s", a.Member.Name, a.To.Name, a.Why)}
	case a.Replace:
		return agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonMemberReplaced, Message: fmt.Sprintf("removed %s (id %x): %s", a.Member.Name, a.Member.ID, a.Why)}
	}
	return agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonMemberRemoved, Message: fmt.Sprintf("removed %s (id %x): %s", a.Member.Name, a.Member.ID, a.Why)}
}

// emit records the events on the StatefulSet.
func (m *Membership) emit(ctx context.Context, sts *appsv1.StatefulSet, evs []agent.Event) error {
	return agent.RecordEvents(ctx, m.Client, sts, m.clock(), evs)
}
