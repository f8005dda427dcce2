package etcd

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// The Events of a recovery.
const (
	ReasonRecoveryStarted = "RecoveryStarted"
	ReasonRecoveryRefused = "RecoveryRefused"
)

// recovery is what the runtime does with a merged EtcdRecover step's
// request, decided from one look (pure).
type recovery int

const (
	recoverNothing recovery = iota
	// recoverRestart: quorum is still lost; restart every member so that
	// each instance manager reads the request and carries it out.
	recoverRestart
	// recoverRefuse: quorum came back before the request reached the
	// runtime; the request is not carried out.
	recoverRefuse
)

// decideRecovery decides what request id asks of the runtime now. A
// request is acted on once: restarted or refused, its ID is recorded.
func decideRecovery(id string, prev *etcdStatus, seen etcdLook) recovery {
	if id == "" || prev != nil && (prev.RecoverDone == id || prev.RecoverRefused == id) {
		return recoverNothing
	}
	if hasQuorum(seen) {
		return recoverRefuse
	}
	return recoverRestart
}

// hasQuorum: more than half of the voters seen are healthy.
func hasQuorum(seen etcdLook) bool {
	voters, healthy := 0, 0
	for _, m := range seen.members {
		if !m.learner {
			voters++
			if m.healthy() {
				healthy++
			}
		}
	}
	return voters > 0 && healthy >= voters/2+1
}

// recover carries out the recovery decision for request id and returns
// the status fields and Event it leads to. Restarting deletes each member
// pod of the StatefulSet (proven by its controller's UID, and deleted
// only if it is still that pod): the StatefulSet makes them again, and
// each instance manager starts with the request in its config. Nothing is
// deleted but the pods; their volumes stay.
func (m *Membership) recover(ctx context.Context, sts *appsv1.StatefulSet, id string, r recovery, st *etcdStatus) (*agent.Event, error) {
	switch r {
	case recoverRefuse:
		st.RecoverRefused = id
		st.Message = fmt.Sprintf("recovery %s not carried out: the cluster has quorum again; revert the step's pull request", id)
		return &agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonRecoveryRefused, Message: st.Message}, nil
	case recoverRestart:
	default:
		return nil, nil
	}
	pods, _, err := agent.MemberPods(ctx, m.Client, m.Namespace, contract.AppEtcd, m.Cluster)
	if err != nil {
		return nil, err
	}
	var errs []error
	var names []string
	for _, p := range pods {
		if !agent.OwnedBy(&p, sts) {
			continue
		}
		uid := p.UID
		err := m.Client.CoreV1().Pods(m.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("restart %s for recovery %s: %w", p.Name, id, err))
			continue
		}
		names = append(names, p.Name)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...) // tried again next pass
	}
	st.RecoverDone = id
	st.Message = fmt.Sprintf("recovery %s: restarted %v so that each member carries it out", id, names)
	m.logger().Warn("carrying out a merged recovery step", "cluster", m.Cluster, "recovery", id, "restarted", names)
	return &agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonRecoveryStarted, Message: st.Message}, nil
}
