package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

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

// read returns the observed state of clusters; nil when no source is set.
func (l liveSource) read(ctx context.Context, clusters []spec.Cluster) (*live.Snapshot, error) {
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
	if l.kubeconfig == "" && !l.inCluster {
		if l.context != "" {
			return nil, &exitError{exitUsage, fmt.Errorf("--context needs --kubeconfig")}
		}
		return nil, nil
	}
	o, err := l.observer()
	if err != nil {
		return nil, err
	}
	return o.Observe(ctx, clusters)
}

// observer is the client-go observer of the source's cluster.
func (l liveSource) observer() (*observe.Observer, error) {
	if l.kubeconfig != "" && l.inCluster {
		return nil, &exitError{exitUsage, fmt.Errorf("--kubeconfig and --in-cluster name two clusters; give one")}
	}
	if l.inCluster && l.context != "" {
		return nil, &exitError{exitUsage, fmt.Errorf("--context picks a kubeconfig context; --in-cluster has none")}
	}
	var cfg *rest.Config
	ns := l.namespace
	var err error
	if l.inCluster {
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, &exitError{exitUsage, fmt.Errorf("--in-cluster: %w", err)}
		}
		if ns == "" {
			ns = podNamespace()
		}
	} else {
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: l.kubeconfig}, &clientcmd.ConfigOverrides{CurrentContext: l.context})
		if cfg, err = loader.ClientConfig(); err != nil {
			return nil, &exitError{exitUsage, fmt.Errorf("kubeconfig %s: %w", l.kubeconfig, err)}
		}
		if ns == "" {
			if ns, _, err = loader.Namespace(); err != nil {
				return nil, &exitError{exitUsage, fmt.Errorf("kubeconfig %s: %w", l.kubeconfig, err)}
			}
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &observe.Observer{Client: client, Namespace: ns, Kinds: observeKinds()}, nil
}
