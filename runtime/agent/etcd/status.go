package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// The runtime's report of an etcd cluster is the contract's document that
// planner/observe reads (contract.EtcdStatus under contract.StatusKeyEtcd),
// so the two sides of the contract cannot drift apart.
type (
	etcdStatus = contract.EtcdStatus
	etcdMember = contract.EtcdMember
)

// nextStatus is the status after a pass (pure): the members as seen, each
// with the claim UID first recorded for its ID; quorum (without it no
// member is healthy or leads); the members being replaced until they have
// joined again; the remove request once it is done; the last leadership
// move; and a message.
func nextStatus(prev *etcdStatus, seen etcdLook, claims map[string]string, req removeRequest, a action, changed bool, now time.Time) etcdStatus {
	st := etcdStatus{ObservedAt: now.UTC().Format(time.RFC3339), ClusterVersion: seen.clusterVersion}
	healthy, voters := voterHealth(seen.members)
	for _, s := range seen.members {
		m := etcdMember{Name: s.name, ID: strconv.FormatUint(s.id, 16), PeerURLs: s.peerURLs, Learner: s.learner,
			Leader: s.leads, Healthy: s.healthy(), Version: s.version, Revision: s.revision, ClaimUID: recordedClaim(prev, s.id), TLS: s.servesTLS}
		if m.ClaimUID == "" {
			m.ClaimUID = claims[s.name]
		}
		st.Members = append(st.Members, m)
	}
	st.Quorum = quorate(healthy, voters)
	if !st.Quorum {
		for i := range st.Members {
			st.Members[i].Healthy, st.Members[i].Leader = false, false
		}
		switch {
		case prev != nil && prev.Quorum:
			st.QuorumLostAt = st.ObservedAt
		case prev != nil:
			st.QuorumLostAt = prev.QuorumLostAt
		}
	}
	st.Replacing = replacing(prev, st.Members, a, changed)
	if prev != nil {
		st.RemoveDone, st.RecoverDone, st.RecoverRefused = prev.RemoveDone, prev.RecoverDone, prev.RecoverRefused
		st.Downgrade = prev.Downgrade // the downgrade's pass updates it (downgrade.go)
		st.LastLeaderMove = prev.LastLeaderMove
		st.QuorumRevision = prev.QuorumRevision
	}
	if st.Quorum {
		// Today's, not the highest ever: a cluster recovered from an older
		// snapshot starts lower.
		st.QuorumRevision = 0
		for _, s := range seen.members {
			if s.healthy() {
				st.QuorumRevision = max(st.QuorumRevision, s.revision)
			}
		}
	}
	if req.ID != "" && seen.listed && !slices.ContainsFunc(st.Members, func(m etcdMember) bool { return m.Name == req.Member }) {
		st.RemoveDone = req.ID
	}
	if changed && a.Kind == actMoveLeader {
		st.LastLeaderMove = &contract.EtcdLeaderMove{From: a.Member.Name, To: a.To.Name, At: st.ObservedAt, Reason: a.Why}
	}
	st.Message = message(a, changed, healthy, voters)
	return st
}

// replacing keeps the names of removed members whose data was lost until
// a member of that name is in the membership again.
func replacing(prev *etcdStatus, members []etcdMember, a action, changed bool) []string {
	var names []string
	if prev != nil {
		names = slices.Clone(prev.Replacing)
	}
	if changed && a.Kind == actRemove && a.Replace && !slices.Contains(names, a.Member.Name) {
		names = append(names, a.Member.Name)
	}
	names = slices.DeleteFunc(names, func(n string) bool {
		return slices.ContainsFunc(members, func(m etcdMember) bool { return m.Name == n })
	})
	slices.Sort(names)
	return slices.Clip(names)
}

func message(a action, changed bool, healthy, voters int) string {
	if !changed {
		return a.Why
	}
	switch a.Kind {
	case actPromote:
		return fmt.Sprintf("promoted learner %s to a voting member (%d voters)", a.Member.Name, voters)
	case actMoveLeader:
		return fmt.Sprintf("moved leadership from %s to %s: %s", a.Member.Name, a.To.Name, a.Why)
	}
	return fmt.Sprintf("removed %s: %s (%d of %d voters healthy)", a.Member.Name, a.Why, healthy, voters)
}

func majorMinor(v string) (int, int, bool) {
	var a, b, c int
	if n, _ := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d.%d", &a, &b, &c); n < 2 {
		return 0, 0, false
	}
	return a, b, true
}

// readEtcdStatus reads the last status; nil when there is none (or it
// cannot be read, as from an older runtime: it is written anew).
func readEtcdStatus(ctx context.Context, c kubernetes.Interface, ns, name string) (*etcdStatus, error) {
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read status: %w", err)
	}
	var st etcdStatus
	if json.Unmarshal([]byte(cm.Data[contract.StatusKeyEtcd]), &st) != nil {
		return nil, nil
	}
	return &st, nil
}

// writeEtcdStatus stores st in ConfigMap name, creating it, or updating it
// when it differs from prev (revisions aside) or prev is a heartbeat old.
func writeEtcdStatus(ctx context.Context, c kubernetes.Interface, ns, name string, prev *etcdStatus, st etcdStatus) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	if prev != nil && sameStatus(*prev, st) {
		if at, err := time.Parse(time.RFC3339, prev.ObservedAt); err == nil && time.Since(at) < agent.StatusHeartbeat {
			return nil
		}
	}
	cms := c.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{contract.LabelManagedBy: contract.ManagedByRuntime}},
			Data: map[string]string{contract.StatusKeyEtcd: string(data)}}, metav1.CreateOptions{FieldManager: contract.FieldManager})
		return wrapStatus(err)
	}
	if err != nil {
		return wrapStatus(err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[contract.StatusKeyEtcd] = string(data)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: contract.FieldManager})
	return wrapStatus(err)
}

// sameStatus compares two statuses but for when they were taken and, with
// quorum, the revisions, which move with every write. Without quorum
// nothing is written and a revision moves only when a member comes back
// or goes: that is news, what a recovery weighs.
func sameStatus(a, b etcdStatus) bool {
	strip := func(s etcdStatus) string {
		s.ObservedAt, s.QuorumRevision = "", 0
		s.Members = slices.Clone(s.Members)
		for i := range s.Members {
			if s.Quorum {
				s.Members[i].Revision = 0
			}
		}
		out, _ := json.Marshal(s)
		return string(out)
	}
	return strip(a) == strip(b)
}

func wrapStatus(err error) error {
	if err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}
