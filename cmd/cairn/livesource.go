package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/observe"
	"github.com/cairn-dev/cairn/planner/spec"
)

// liveSource is where the observed state comes from: a file, a cluster
// through a kubeconfig, or nothing (nothing is deployed yet).
type liveSource struct {
	file, kubeconfig, namespace string
}

func (l *liveSource) flags(f *pflag.FlagSet) {
	f.StringVar(&l.file, "live", "", "observed-state file (docs/live-state.md)")
	f.StringVar(&l.kubeconfig, "kubeconfig", "", "observe the clusters in the Kubernetes cluster of this kubeconfig instead")
	f.StringVar(&l.namespace, "namespace", "", "with --kubeconfig: the namespace of clusters whose spec names none (default: the kubeconfig context's)")
}

// read returns the observed state of clusters; nil when no source is set.
func (l liveSource) read(ctx context.Context, clusters []spec.Cluster) (*live.Snapshot, error) {
	switch {
	case l.file != "" && l.kubeconfig != "":
		return nil, &exitError{exitUsage, fmt.Errorf("--live and --kubeconfig are two sources of the same state; give one")}
	case l.file != "":
		s, err := live.ReadFile(l.file)
		if err != nil {
			return nil, &exitError{exitInvalid, err}
		}
		return s, nil
	case l.kubeconfig != "":
		cfg, err := kubeConfig(l.kubeconfig)
		if err != nil {
			return nil, &exitError{exitUsage, fmt.Errorf("kubeconfig: %w", err)}
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		ns := l.namespace
		if ns == "" {
			if ns, _, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				&clientcmd.ClientConfigLoadingRules{ExplicitPath: l.kubeconfig}, &clientcmd.ConfigOverrides{}).Namespace(); err != nil {
				return nil, &exitError{exitUsage, fmt.Errorf("kubeconfig: %w", err)}
			}
		}
		return (&observe.Observer{Client: client, Namespace: ns}).Observe(ctx, clusters)
	}
	return nil, nil
}
