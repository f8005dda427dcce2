package main

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/observe"
	"github.com/cairn-dev/cairn/planner/spec"
)

// liveSource says where the observed state comes from: a file (--live) or
// a Kubernetes cluster (--kubeconfig with --context, or --in-cluster).
type liveSource struct {
	file, kubeconfig, context, namespace string
	inCluster                            bool
	// recoverAfter is how long an etcd cluster's quorum must have been
	// lost before a recovery step is proposed.
	recoverAfter time.Duration
}

func (l *liveSource) flags(f *pflag.FlagSet) {
	f.StringVar(&l.file, "live", "", "observed-state file (docs/live-state.md)")
	f.StringVar(&l.kubeconfig, "kubeconfig", "", "observe the clusters in the Kubernetes cluster of this kubeconfig instead")
	f.StringVar(&l.context, "context", "", "with --kubeconfig: the kubeconfig context to use (default: its current context)")
	f.BoolVar(&l.inCluster, "in-cluster", false, "observe the Kubernetes cluster cairn runs in, through its ServiceAccount")
	f.StringVar(&l.namespace, "namespace", "", "the namespace of clusters whose spec names none (default: the kubeconfig context's, or the pod's)")
	f.DurationVar(&l.recoverAfter, "etcd-recover-after", contract.EtcdRecoverAfter, "how long an etcd cluster's quorum must have been lost before cairn proposes a recovery step (docs/etcd-recovery.md)")
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
		s, err := liveKinds().ReadFile(l.file)
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

// client is a client of the source's cluster, and its namespace.
func (l liveSource) client() (kubernetes.Interface, string, error) {
	t, err := l.target()
	if err != nil {
		return nil, "", err
	}
	client, err := kubernetes.NewForConfig(t.Config)
	if err != nil {
		return nil, "", err
	}
	return client, t.Namespace, nil
}

// observer is the client-go observer of the source's cluster.
func (l liveSource) observer() (*observe.Observer, error) {
	client, ns, err := l.client()
	if err != nil {
		return nil, err
	}
	return &observe.Observer{Client: client, Namespace: ns, Kinds: observeKinds(), RecoverAfter: l.recoverAfter}, nil
}

// lags are the lag classes the runtimes of the clusters whose kind reports
// them last reported (the members of their status ConfigMap), by cluster
// and member; none from --live, which holds no lag. A cluster whose
// runtime reports nothing yet has none.
func (l liveSource) lags(ctx context.Context, clusters []spec.Cluster) (map[string]map[string]string, error) {
	if l.file != "" {
		return nil, nil
	}
	client, ns, err := l.client()
	if err != nil {
		return nil, err
	}
	return readLags(ctx, client, ns, clusters)
}

func readLags(ctx context.Context, client kubernetes.Interface, namespace string, clusters []spec.Cluster) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, c := range clusters {
		ref := c.Ref()
		k, ok := kindNamed(ref.Kind)
		if !ok || k.status.lags == nil {
			continue
		}
		ns := cmp.Or(ref.Namespace, namespace)
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, contract.StatusConfigMap(ref.Name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of %s: %w", ref, err)
		}
		lags, err := k.status.lags(cm.Data)
		if err != nil {
			return nil, fmt.Errorf("status of %s: %w", ref, err)
		}
		if len(lags) > 0 {
			out[ref.Name] = lags
		}
	}
	return out, nil
}
