package observe

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

// runtime reads the cluster's runtime Deployment as the API server has
// it: the base renders it as it runs until a step changes it, as it does
// the members' template. A missing Deployment reads as one rendered before
// cairn hardened it (the zero value), so the base renders what cairn
// rendered then and a step brings the rest. Any other error is returned:
// reading "not hardened" for a Deployment that is would render it back.
func (o *Observer) runtime(ctx context.Context, ns, cluster string) (live.Runtime, error) {
	d, err := o.Client.AppsV1().Deployments(ns).Get(ctx, contract.Runtime(cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return live.Runtime{}, nil
	}
	if err != nil {
		return live.Runtime{}, fmt.Errorf("runtime Deployment %s: %w", contract.Runtime(cluster), err)
	}
	return runtimeOf(d), nil
}

// readOnlyRoot reports whether container c runs with a read-only root
// filesystem.
func readOnlyRoot(c corev1.Container) bool {
	sc := c.SecurityContext
	return sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
}

// runtimeOf reads the runtime container's security context and whether
// it has a memory limit.
func runtimeOf(d *appsv1.Deployment) live.Runtime {
	var out live.Runtime
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == contract.RuntimeContainer {
			out.ReadOnlyRoot = readOnlyRoot(c)
			_, limited := c.Resources.Limits[corev1.ResourceMemory]
			out.NoMemoryLimit = !limited
		}
	}
	return out
}
