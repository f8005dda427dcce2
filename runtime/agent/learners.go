package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Learners looks after an etcd cluster's membership. It promotes learners
// once they have caught up: one at a time, never more than one per pass
// (etcd itself refuses to promote a learner whose log is not close to the
// leader's, so a refused promotion is a learner still catching up, tried
// again on the next pass). And it reports the membership in the status
// ConfigMap <cluster>-cairn-status, which the planner's observation reads.
type Learners struct {
	Endpoints []string
	// Client, Namespace and Cluster say where to write the status; a nil
	// Client writes none.
	Client             kubernetes.Interface
	Namespace, Cluster string
	Log                *slog.Logger
}

// Pass promotes at most one caught-up learner, then reports the status,
// whatever the promotion did.
func (l *Learners) Pass(ctx context.Context) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: l.Endpoints, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer cli.Close()
	promoteErr := l.promote(ctx, cli)
	if l.Client == nil {
		return promoteErr
	}
	st, err := l.status(ctx, cli)
	if err != nil {
		return errors.Join(promoteErr, err)
	}
	return errors.Join(promoteErr, writeEtcdStatus(ctx, l.Client, l.Namespace, l.Cluster+"-cairn-status", st))
}

func (l *Learners) promote(ctx context.Context, cli *clientv3.Client) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	members, err := cli.MemberList(cctx)
	if err != nil {
		return fmt.Errorf("member list: %w", err)
	}
	for _, m := range members.Members {
		if !m.IsLearner || m.Name == "" {
			continue // not a learner, or not started yet
		}
		if ok, why := l.podWanted(ctx, m.Name); !ok {
			l.logger().Info("learner not promoted", "member", m.Name, "reason", why)
			continue
		}
		if _, err := cli.MemberPromote(cctx, m.ID); err != nil {
			if errors.Is(err, rpctypes.ErrMemberLearnerNotReady) || strings.Contains(err.Error(), "in sync with leader") {
				l.logger().Info("learner is catching up", "member", m.Name)
				return nil
			}
			return fmt.Errorf("promote %s: %w", m.Name, err)
		}
		l.logger().Info("learner promoted to a voting member", "member", m.Name)
		return nil // one membership change per pass
	}
	return nil
}

// podWanted reports whether a learner's pod is one the StatefulSet keeps
// and is ready: a learner whose pod is going away (a reverted scale-out)
// must not become a voter that would then be missing.
func (l *Learners) podWanted(ctx context.Context, name string) (bool, string) {
	if l.Client == nil {
		return true, ""
	}
	sts, err := l.Client.AppsV1().StatefulSets(l.Namespace).Get(ctx, l.Cluster, metav1.GetOptions{})
	if err != nil {
		return false, "the StatefulSet cannot be read: " + err.Error()
	}
	ord, err := strconv.Atoi(strings.TrimPrefix(name, l.Cluster+"-"))
	if err != nil || sts.Spec.Replicas == nil || ord >= int(*sts.Spec.Replicas) {
		return false, "its pod is not one the StatefulSet keeps"
	}
	pod, err := l.Client.CoreV1().Pods(l.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, "its pod cannot be read: " + err.Error()
	}
	if pod.DeletionTimestamp != nil {
		return false, "its pod is being deleted"
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true, ""
		}
	}
	return false, "its pod is not ready"
}

func (l *Learners) logger() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}
