package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/certs"
)

// Membership looks after an etcd cluster's membership. Each pass looks
// at the members, decides at most one change (decide: promote a caught-up
// learner, carry out a merged EtcdRemoveMember step, replace a member
// whose volume claim was replaced, move leadership off a leader whose
// node is cordoned), makes it, and reports the membership
// in the status ConfigMap <cluster>-cairn-status that the planner's
// observation reads, with an Event on the StatefulSet for each change and
// the cairn_etcd_* metrics.
type Membership struct {
	// Endpoints are the etcd client endpoints a pass dials.
	Endpoints          []string
	Client             kubernetes.Interface
	Namespace, Cluster string
	// Port is the members' client port backups use (2379 when zero).
	Port int
	// Metrics, when set, are kept up to date.
	Metrics *EtcdMetrics
	Log     *slog.Logger
	// interval is the time between passes (etcdInterval when zero).
	interval time.Duration
	// now is the clock; time.Now when nil.
	now func() time.Time
	// Certs keeps the cluster's certificate Secrets while its rendered
	// config turns TLS on without a cert-manager issuer (tls.go); nil
	// fails such a pass: the members would wait for certificates nobody
	// issues.
	Certs *certs.Keeper
	// tls is how the members are reached: the client configuration of the
	// last pass, nil for plain HTTP. Backups read it from their own
	// goroutine.
	tls atomic.Pointer[tls.Config]
	// offered is the TLS client configuration with which the members are
	// checked while the cluster accepts TLS (and reached once it requires
	// it); nil with TLS off.
	offered atomic.Pointer[tls.Config]
	// onDefrag, when set, is called as a defragmentation of member starts
	// (running) and ends: tests watch that no two overlap.
	onDefrag func(member string, running bool)
	// nodesForbidden: reading a node was forbidden (logged once,
	// nodes.go); tests read it while passes run.
	nodesForbidden atomic.Bool
	// rolesForbidden: labelling a member was forbidden (logged once,
	// roles.go).
	rolesForbidden atomic.Bool
}

// Pass makes one pass: look, decide, act, report.
func (m *Membership) Pass(ctx context.Context) error {
	config, err := m.renderedConfig(ctx)
	if err != nil {
		return err
	}
	mode, err := m.keepTLS(ctx, config) // tls.go
	if err != nil {
		return err
	}
	cli, err := m.dial(ctx, m.Endpoints)
	if err != nil {
		return err
	}
	defer cli.Close()
	prev, err := readEtcdStatus(ctx, m.Client, m.Namespace, m.statusName())
	if err != nil {
		return err
	}
	sts, err := m.Client.AppsV1().StatefulSets(m.Namespace).Get(ctx, contract.StatefulSet(m.Cluster), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read statefulset: %w", err)
	}
	req, recoverID := requests(config, prev)
	seen := look(ctx, cli, prev, m.clientTLS())
	m.servedTLS(ctx, mode, &seen)
	claims, err := m.claims(ctx, seen)
	if err != nil {
		return err
	}
	if r := decideRecovery(recoverID, prev, seen); r != recoverNothing {
		// A merged recovery step is all this pass does.
		st := nextStatus(prev, seen, claims, req, action{}, false, m.clock())
		ev, err := m.recover(ctx, sts, recoverID, r, &st)
		if err != nil {
			return err
		}
		if err := writeEtcdStatus(ctx, m.Client, m.Namespace, m.statusName(), prev, st); err != nil {
			return err
		}
		m.Metrics.observe(st, action{}, false)
		return m.emit(ctx, sts, append(events(prev, st, seen, action{}, false), *ev))
	}
	v := m.view(ctx, sts, seen, prev, claims, req, m.memberNodes(ctx, sts, seen))
	act := decide(v)
	changed, actErr := m.act(ctx, cli, seen, act)
	m.keepRoles(ctx, sts, memberRoles(v, !m.nodesForbidden.Load())) // roles.go
	var tlsEvents []agent.Event
	moved := false
	if !changed {
		tlsEvents, moved = m.movePeersToTLS(ctx, cli, mode, seen) // tls.go
	}
	now := seen
	if changed || moved {
		now = look(ctx, cli, prev, m.clientTLS()) // report the membership as it is now
		m.servedTLS(ctx, mode, &now)
	}
	st := nextStatus(prev, now, claims, req, act, changed, m.clock())
	downgradeEvents := m.downgrade(ctx, cli, config, now, prev, &st, changed) // downgrade.go
	if err := writeEtcdStatus(ctx, m.Client, m.Namespace, m.statusName(), prev, st); err != nil {
		return errors.Join(actErr, err)
	}
	m.Metrics.observe(st, act, changed)
	evErr := m.emit(ctx, sts, slices.Concat(events(prev, st, seen, act, changed), downgradeEvents, tlsEvents))
	return errors.Join(actErr, evErr, m.maintain(ctx, cli, sts, config, now, busyWith(act, changed)))
}

func (m *Membership) statusName() string { return contract.StatusConfigMap(m.Cluster) }

func (m *Membership) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// renderedConfig reads the rendered ConfigMap <cluster>-cairn, once a
// pass: the merged steps' requests and the maintenance policy; nil when
// there is none yet.
func (m *Membership) renderedConfig(ctx context.Context) (map[string]string, error) {
	cm, err := m.Client.CoreV1().ConfigMaps(m.Namespace).Get(ctx, contract.ConfigMap(m.Cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return cm.Data, nil
}

// requests reads the requests of merged steps from the rendered config:
// the remove-member request of an EtcdRemoveMember step (one already
// carried out is no request) and the recovery ID of an EtcdRecover step
// (decideRecovery says whether it is still to act on).
func requests(config map[string]string, prev *etcdStatus) (removeRequest, string) {
	recoverID := config[contract.KeyRecoverID]
	r := removeRequest{ID: config[contract.KeyRequestRemoveMemberID], Member: config[contract.KeyRequestRemoveMember]}
	if r.ID == "" || r.Member == "" || prev != nil && prev.RemoveDone == r.ID {
		return removeRequest{}, recoverID
	}
	return r, recoverID
}

// claims reads the UID of each named member's volume claim,
// data-<name> (contract.DataClaim); a claim that does not exist (yet) is
// left out.
func (m *Membership) claims(ctx context.Context, seen etcdLook) (map[string]string, error) {
	out := map[string]string{}
	for _, mem := range seen.members {
		if mem.name == "" {
			continue
		}
		pvc, err := m.Client.CoreV1().PersistentVolumeClaims(m.Namespace).Get(ctx, contract.DataClaim(mem.name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read claim of %s: %w", mem.name, err)
		}
		out[mem.name] = string(pvc.UID)
	}
	return out, nil
}

// view builds decide's input; nodes are the members' nodes
// (memberNodes).
func (m *Membership) view(ctx context.Context, sts *appsv1.StatefulSet, seen etcdLook, prev *etcdStatus, claims map[string]string, req removeRequest, nodes map[string]memberNode) view {
	v := view{Remove: req, CanMoveLeader: true}
	if prev != nil {
		v.Replacing = prev.Replacing
	}
	for _, s := range seen.members {
		mv := memberView{ID: s.id, Name: s.name, Learner: s.learner, Leader: s.leads, Healthy: s.healthy(), Applied: s.applied, Revision: s.revision}
		if n, ok := nodes[s.name]; ok && s.name != "" {
			mv.Node, mv.Cordoned = n.Node, n.Cordoned
		}
		if rec := recordedClaim(prev, s.id); rec != "" && claims[s.name] != "" && rec != claims[s.name] {
			mv.ClaimReplaced = true
		}
		if s.learner && s.name != "" {
			mv.PodProblem, mv.Stray = m.podProblem(ctx, sts, s.name)
		}
		if major, minor, ok := majorMinor(s.version); ok && (major < 3 || major == 3 && minor < 3) {
			v.CanMoveLeader = false
		}
		v.Members = append(v.Members, mv)
	}
	return v
}

// recordedClaim is the claim UID the last status recorded for member id.
func recordedClaim(prev *etcdStatus, id uint64) string {
	if prev == nil {
		return ""
	}
	for _, m := range prev.Members {
		if m.ID == strconv.FormatUint(id, 16) {
			return m.ClaimUID
		}
	}
	return ""
}

// podProblem says why a learner's pod may not get a vote: a learner whose
// pod is going away (a reverted scale-out) must not become a voter that
// would then be missing, nor one whose pod is not ready. stray: the
// StatefulSet does not keep the pod at all (its ordinal is at or above
// the replicas).
func (m *Membership) podProblem(ctx context.Context, sts *appsv1.StatefulSet, name string) (problem string, stray bool) {
	ord, ok := contract.MemberOrdinal(m.Cluster, name)
	if ok && sts.Spec.Replicas != nil && ord >= int(*sts.Spec.Replicas) {
		return "its pod is not one the StatefulSet keeps", true
	}
	return m.readyProblem(ctx, sts, name, ok), false
}

// readyProblem is podProblem for a learner the StatefulSet keeps (or
// whose name is not a member's: ok false).
func (m *Membership) readyProblem(ctx context.Context, sts *appsv1.StatefulSet, name string, ok bool) string {
	if !ok || sts.Spec.Replicas == nil {
		return "its pod is not one the StatefulSet keeps"
	}
	pod, err := m.Client.CoreV1().Pods(m.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err != nil:
		return "its pod cannot be read: " + err.Error()
	case !agent.OwnedBy(pod, sts):
		return "its pod is not the StatefulSet's"
	case pod.DeletionTimestamp != nil:
		return "its pod is being deleted"
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return ""
		}
	}
	return "its pod is not ready"
}

func (m *Membership) logger() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}
