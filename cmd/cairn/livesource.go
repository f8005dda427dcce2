package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/observe"
	"github.com/cairn-dev/cairn/planner/spec"
)

// liveSource says where the observed state comes from: a file (--live) or
// a Kubernetes cluster (--kubeconfig with --context, or --in-cluster).
type liveSource struct {
	file, kubeconfig, context, namespace string
	inCluster                            bool
}

func (l *liveSource) flags(f *pflag.FlagSet) {
	f.StringVar(&l.file, "live", "", "observed-state file (docs/live-state.md)")
	f.StringVar(&l.kubeconfig, "kubeconfig", "", "observe the clusters in the Kubernetes cluster of this kubeconfig instead")
	f.StringVar(&l.context, "context", "", "with --kubeconfig: the kubeconfig context to use (default: its current context)")
	f.BoolVar(&l.inCluster, "in-cluster", false, "observe the Kubernetes cluster cairn runs in, through its ServiceAccount")
	f.StringVar(&l.namespace, "namespace", "", "the namespace of clusters whose spec names none (default: the kubeconfig context's, or the pod's)")
}

// read returns the observed state of clusters; nil when no source is
// set: the commands that plan (plan, render, check, policy test, propose)
// read a cluster only when told to.
func (l liveSource) read(ctx context.Context, clusters []spec.Cluster) (*live.Snapshot, error) {
	if l.file == "" && l.kubeconfig == "" && !l.inCluster {
		if l.context != "" {
			return nil, &exitError{exitUsage, fmt.Errorf("--context needs --kubeconfig")}
		}
		return nil, nil
	}
	return l.readAny(ctx, clusters)
}

// readAny returns the observed state of clusters from --live, or from the
// cluster resolveKube finds: the commands about what runs (status, diff,
// observe) always read one.
func (l liveSource) readAny(ctx context.Context, clusters []spec.Cluster) (*live.Snapshot, error) {
	if l.file != "" {
		if l.kubeconfig != "" || l.inCluster {
			return nil, &exitError{exitUsage, fmt.Errorf("--live and --kubeconfig/--in-cluster are two sources of the same state; give one")}
		}
		s, err := live.ReadFile(l.file)
		if err != nil {
			return nil, &exitError{exitInvalid, err}
		}
		return s, nil
	}
	o, err := l.observer()
	if err != nil {
		return nil, err
	}
	return o.Observe(ctx, clusters)
}

// target is the Kubernetes cluster of the flags (resolveKube), in
// --namespace when set.
func (l liveSource) target() (*kubeTarget, error) {
	t, err := resolveKube(l.kubeconfig, l.context, l.inCluster)
	if err != nil {
		return nil, err
	}
	if l.namespace != "" {
		t.Namespace = l.namespace
	}
	return t, nil
}

// observer is the client-go observer of the source's cluster.
func (l liveSource) observer() (*observe.Observer, error) {
	t, err := l.target()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(t.Config)
	if err != nil {
		return nil, err
	}
	return &observe.Observer{Client: client, Namespace: t.Namespace, Kinds: observeKinds()}, nil
}
