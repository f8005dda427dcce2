package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/reconcile/shard"
)

// shardOptions are the flags of one replica of a sharded fleet.
type shardOptions struct {
	shards        int
	id, namespace string
	duration      time.Duration
}

func (s *shardOptions) flags(f *pflag.FlagSet) {
	f.IntVar(&s.shards, "shards", 0, "run as one replica of several: spread the clusters over N shards held in Leases (every replica the same N); 0 or 1: publish every cluster")
	f.StringVar(&s.id, "replica-id", "", "with --shards: this replica's name in the Leases (default: $POD_NAME, else the host name)")
	f.StringVar(&s.namespace, "lease-namespace", "", "with --shards: namespace of the Leases (default: the kubeconfig context's, or the pod's)")
	f.DurationVar(&s.duration, "lease-duration", shard.DefaultLeaseDuration, "with --shards: how long a Lease lasts unrenewed, in whole seconds")
}

// member is the shard member of the flags, in the Kubernetes cluster
// resolveKube finds; nil without --shards.
func (s shardOptions) member(src liveSource, log *slog.Logger) (*shard.Member, error) {
	if s.shards <= 1 {
		return nil, nil
	}
	t, err := resolveKube(src.kubeconfig, src.context, src.inCluster)
	if err != nil {
		return nil, err
	}
	// Renewals get a client of their own: the observer's calls do not
	// hold them back behind client-go's rate limiter.
	cfg := rest.CopyConfig(t.Config)
	cfg.QPS, cfg.Burst = 20, 40
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	id := cmp.Or(s.id, os.Getenv(contract.EnvPodName))
	if id == "" {
		if id, err = os.Hostname(); err != nil {
			return nil, &exitError{exitUsage, fmt.Errorf("--replica-id: no $%s and no host name: %w", contract.EnvPodName, err)}
		}
	}
	m, err := shard.New(shard.Config{Client: client, Namespace: cmp.Or(s.namespace, t.Namespace), ID: id, Shards: s.shards, LeaseDuration: s.duration, Log: log})
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	return m, nil
}

// runMember runs m until stop, which releases its Leases (unless its
// cause is shard.ErrKilled); call it once the loop has stopped, as m
// outlives ctx. m's triggers reach trigger; hook is where the webhook's
// go: each passes here and has every replica pass (Notify). It waits, for
// at most wait (a lease duration), until m holds its share.
func runMember(ctx context.Context, m *shard.Member, wait time.Duration, trigger chan struct{}, log *slog.Logger) (hook chan struct{}, stop func(cause error)) {
	mctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(mctx) }()
	hook = make(chan struct{}, 1)
	pass := func() {
		select {
		case trigger <- struct{}{}:
		default: // a pass is already due
		}
	}
	go func() {
		for {
			select {
			case <-mctx.Done():
				return
			case <-m.Triggers():
				pass()
			case <-hook:
				pass()
				if err := m.Notify(mctx); err != nil && mctx.Err() == nil {
					log.Warn("could not have the other replicas pass", "err", err.Error())
				}
			}
		}
	}()
	select {
	case <-m.Ready():
	case <-ctx.Done():
	case <-time.After(wait):
		log.Warn("starting the loop before this replica holds its shards")
	}
	return hook, func(cause error) { cancel(cause); <-done }
}
