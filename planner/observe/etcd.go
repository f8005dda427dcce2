package observe

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Etcd observes EtcdCluster: members' roles, versions and lost data come
// from the runtime's etcd status, which etcd itself reports.
func Etcd() Kind { return etcdKind{} }

type etcdKind struct{}

func (etcdKind) Kind() string      { return spec.EtcdKind }
func (etcdKind) Container() string { return contract.EtcdContainer }

func (etcdKind) Status(status map[string]string, out *live.Cluster) (MemberFunc, error) {
	var st *contract.EtcdStatus
	if raw := status[contract.StatusKeyEtcd]; raw != "" {
		st = &contract.EtcdStatus{}
		if err := json.Unmarshal([]byte(raw), st); err != nil {
			return nil, err
		}
		legacyHealth(raw, st)
		out.ClusterVersion = st.ClusterVersion
		out.Downgrade = etcdDowngrade(st.Downgrade)
		out.QuorumLost = quorumLoss(st)
		out.RecoverDone, out.RecoverRefused = st.RecoverDone, st.RecoverRefused
	}
	space, err := etcdMaintenanceStatus(status[contract.StatusKeyEtcdMaintenance], out)
	if err != nil {
		return nil, err
	}
	return func(pod *corev1.Pod, m *live.Member) {
		m.DBSize, m.DBSizeInUse, m.SpaceQuota = space[pod.Name].DBSize, space[pod.Name].DBSizeInUse, space[pod.Name].Quota
		m.Role = etcdRole(pod, st)
		m.Version = etcdVersion(pod.Name, m.Version, st)
		m.DataLost = st != nil && slices.Contains(st.Replacing, pod.Name)
		m.Revision = etcdRevision(pod.Name, st)
		m.TLS, m.PeerTLS = etcdTLS(pod.Name, st)
	}, nil
}

// quorumLoss is the status's lost quorum; the Observer says whether it is
// Long.
func quorumLoss(st *contract.EtcdStatus) *live.QuorumLoss {
	if st.Quorum || st.QuorumLostAt == "" {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, st.QuorumLostAt); err != nil {
		return nil
	}
	return &live.QuorumLoss{Since: live.Timestamp(st.QuorumLostAt), Revision: st.QuorumRevision}
}

// etcdTLS is what the runtime last reported of a member's TLS: served on
// its client port, verified; and its peer URLs all https.
func etcdTLS(name string, st *contract.EtcdStatus) (served, peers bool) {
	if st == nil {
		return false, false
	}
	for _, m := range st.Members {
		if m.Name == name {
			return m.TLS, contract.EtcdPeerTLS(m.PeerURLs)
		}
	}
	return false, false
}

// etcdRevision is the store revision the member last reported, while
// quorum is lost; 0 when it did not answer the runtime.
func etcdRevision(name string, st *contract.EtcdStatus) int64 {
	if st == nil || st.Quorum {
		return 0
	}
	for _, m := range st.Members {
		if m.Name == name {
			return m.Revision
		}
	}
	return 0
}

// etcdRole is a pod's member role in the runtime's status. A voter that
// is not healthy is "unknown". A pod missing from the membership is
// "removed" only when the status is newer than the pod, the runtime is not
// replacing it, and the status lists no member that has not started yet
// (which has no name and could be this pod); otherwise its role is
// unknown. A learner not started yet whose peer URL names the pod is the
// pod's: a scale-out's new member, which never counts toward quorum.
func etcdRole(pod *corev1.Pod, st *contract.EtcdStatus) live.Role {
	if st == nil {
		return live.RoleUnknown
	}
	replacing := slices.Contains(st.Replacing, pod.Name)
	unnamed := false
	for _, m := range st.Members {
		switch {
		case m.Name == "" && peerPod(m, pod.Name) != "" && peerPod(m, pod.Name) != pod.Name:
			// Not started yet, and another pod's.
		case m.Name == "" && m.Learner && peerPod(m, pod.Name) == pod.Name && !replacing:
			// Added for this pod and not started yet: a learner never
			// counts toward quorum, so a scale-out is no quorum loss.
			return live.RoleLearner
		case m.Name == "":
			unnamed = true
		case m.Name != pod.Name:
		case m.Learner:
			return live.RoleLearner
		case !m.Healthy:
			return live.RoleUnknown
		case m.Leader:
			return live.RoleLeader
		default:
			return live.RoleFollower
		}
	}
	at, err := time.Parse(time.RFC3339, st.ObservedAt)
	if replacing || unnamed || err != nil || !at.After(pod.CreationTimestamp.Time) {
		return live.RoleUnknown
	}
	return live.RoleRemoved
}

// peerPod is the member of pod's cluster that a member's first peer URL
// names: cairn adds each member with its pod's stable DNS name,
// <pod>.<service>...; "" when the URL names none (an address).
func peerPod(m contract.EtcdMember, pod string) string {
	i := strings.LastIndexByte(pod, '-')
	if len(m.PeerURLs) == 0 || i < 0 {
		return ""
	}
	host := strings.TrimPrefix(strings.TrimPrefix(m.PeerURLs[0], "https://"), "http://")
	name, _, _ := strings.Cut(host, ".")
	if _, ok := contract.MemberOrdinal(pod[:i], name); !ok {
		return ""
	}
	return name
}

// legacyHealth reads a status written by a runtime from before members'
// health was reported (it has no "quorum" key): that runtime listed its
// members as healthy, and a planner newer than the runtime must not take
// them all for down, or it would wait for the very runtime upgrade it
// plans.
func legacyHealth(raw string, st *contract.EtcdStatus) {
	var keys map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &keys) != nil {
		return
	}
	if _, ok := keys["quorum"]; ok {
		return
	}
	st.Quorum = true
	for i := range st.Members {
		st.Members[i].Healthy = true
	}
}

// etcdVersion is the version a member's own etcd reports in the runtime's
// status, so that an upgraded pod counts as upgraded only once its etcd
// runs again at the new version; the pod's image tag while the status
// reports none.
func etcdVersion(name, image string, st *contract.EtcdStatus) string {
	if st == nil {
		return image
	}
	for _, m := range st.Members {
		if m.Name == name && m.Version != "" {
			return m.Version
		}
	}
	return image
}
