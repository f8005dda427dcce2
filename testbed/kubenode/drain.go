package kubenode

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// DrainRetry is how long a drain waits before it asks again for an
// eviction a PodDisruptionBudget refused: kubectl drain's 5 s.
const DrainRetry = 5 * time.Second

// Evicted is what a drain saw of one pod it evicted.
type Evicted struct {
	// Pod is the pod's namespace/name.
	Pod string
	// Refused counts the evictions the Eviction API refused (429: a
	// PodDisruptionBudget did not allow it) before one passed.
	Refused int
	// Passed and Gone are how long after the drain began the eviction
	// passed and the pod was gone (deleted, or made again under its
	// name with another UID, as a StatefulSet does).
	Passed, Gone time.Duration
}

func (e Evicted) String() string {
	return fmt.Sprintf("%s (refused %d times, evicted after %.1fs, gone after %.1fs)", e.Pod, e.Refused, e.Passed.Seconds(), e.Gone.Seconds())
}

// Drain drains a node as `kubectl drain --ignore-daemonsets
// --delete-emptydir-data --timeout` does: it cordons the node, then asks
// the Eviction API to evict every pod on it that a DaemonSet or the node
// itself (a mirror pod) does not own, each pod on its own and all at
// once; an eviction a PodDisruptionBudget refuses (429) is asked again
// after DrainRetry, and a pod already gone counts as evicted. It waits
// until every evicted pod is gone and returns, in the order the pods
// went, what it saw of each. A pod still there when timeout has passed
// (or ctx ends) is an error naming it; so is any refusal that is not a
// budget's. The node stays cordoned: Uncordon ends the maintenance.
func (c *Cluster) Drain(t testing.TB, ctx context.Context, name string, timeout time.Duration) ([]Evicted, error) {
	t.Helper()
	c.node(t, name)
	c.Cordon(t, name)
	client := c.Client(t)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String()})
	if err != nil {
		return nil, fmt.Errorf("drain %s: list its pods: %w", name, err)
	}
	began := time.Now()
	var (
		mu     sync.Mutex
		out    []Evicted
		failed []error
		wg     sync.WaitGroup
	)
	for _, p := range pods.Items {
		if !drained(p) {
			continue
		}
		wg.Add(1)
		go func(p corev1.Pod) {
			defer wg.Done()
			e, err := evict(ctx, client, p, began)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			out = append(out, e)
		}(p)
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Gone < out[j].Gone })
	if len(failed) > 0 {
		msgs := make([]string, len(failed))
		for i, err := range failed {
			msgs[i] = err.Error()
		}
		sort.Strings(msgs)
		return out, fmt.Errorf("drain %s: %s", name, strings.Join(msgs, "; "))
	}
	return out, nil
}

// drained reports whether a drain evicts the pod: not a mirror pod, not
// a DaemonSet's, not ended already.
func drained(p corev1.Pod) bool {
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "DaemonSet" {
		return false
	}
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// evict evicts pod p and waits until it is gone.
func evict(ctx context.Context, c kubernetes.Interface, p corev1.Pod, began time.Time) (Evicted, error) {
	e := Evicted{Pod: p.Namespace + "/" + p.Name}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}}
	for {
		err := c.CoreV1().Pods(p.Namespace).EvictV1(ctx, ev)
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone already, or another pod under its name (the UID
			// precondition failed): this one is gone too.
			break
		}
		if !apierrors.IsTooManyRequests(err) {
			return e, fmt.Errorf("evict %s: %w", e.Pod, err)
		}
		e.Refused++
		select {
		case <-ctx.Done():
			return e, fmt.Errorf("evict %s: still refused after %d tries (%v): %w", e.Pod, e.Refused, err, ctx.Err())
		case <-time.After(DrainRetry):
		}
	}
	e.Passed = time.Since(began)
	for {
		now, err := c.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || err == nil && now.UID != p.UID:
			e.Gone = time.Since(began)
			return e, nil
		case err != nil && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			return e, fmt.Errorf("evicted %s: %w", e.Pod, err)
		}
		select {
		case <-ctx.Done():
			return e, fmt.Errorf("evicted %s, but it is still there: %w", e.Pod, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
