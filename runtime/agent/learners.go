package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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

// Pass promotes at most one caught-up learner, then reports the status.
func (l *Learners) Pass(ctx context.Context) error {
	if err := l.promote(ctx); err != nil {
		return err
	}
	if l.Client == nil {
		return nil
	}
	st, err := l.status(ctx)
	if err != nil {
		return err
	}
	return writeStatus(ctx, l.Client, l.Namespace, l.Cluster+"-cairn-status", etcdStatusKey, st)
}

func (l *Learners) promote(ctx context.Context) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: l.Endpoints, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer cli.Close()
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
		if _, err := cli.MemberPromote(cctx, m.ID); err != nil {
			if strings.Contains(err.Error(), "not in sync") || strings.Contains(err.Error(), "not ready") {
				l.Log.Info("learner is catching up", "member", m.Name)
				return nil
			}
			return fmt.Errorf("promote %s: %w", m.Name, err)
		}
		l.Log.Info("learner promoted to a voting member", "member", m.Name)
		return nil // one membership change per pass
	}
	return nil
}
