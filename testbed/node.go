package testbed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// NodeName is the one node a test bed has.
const NodeName = "testbed-node"

// Running is what runs behind one pod, as a kubelet's containers do.
type Running struct {
	// IP is the pod's IP: the 127.0.0.x address its process listens on.
	IP string
	// Ready is the readiness probe; nil means always ready.
	Ready func(ctx context.Context) bool
	// Exited reports that the process has ended; the node then starts it
	// again, as a kubelet restarts a container. Nil means it never ends.
	Exited func() bool
	// Stop ends the process (SIGTERM, then SIGKILL) and returns when it
	// has ended.
	Stop func()
	// Outcome is how an ended process of a pod that is not restarted
	// (restartPolicy Never: a Job's) ended: its exit code and termination
	// message. Nil reports exit code 0.
	Outcome func() (code int32, message string)
}

// Backer starts what runs behind a pod. A pod it does not back (ok false)
// runs nothing and is always ready.
type Backer interface {
	Start(ctx context.Context, pod *corev1.Pod) (r Running, ok bool, err error)
}

// Node is a kubelet stand-in for one namespace: it binds pods to the test
// bed's node, starts what backs them, reports Running, the pod IP and
// Ready from the backing process's health, restarts a process that ended,
// stops it and removes the pod when the pod is deleted, and binds claims
// (growing their capacity when their request grows, as a resizer does).
type Node struct {
	client kubernetes.Interface
	ns     string
	backer Backer
	// Interval is the time between passes.
	interval time.Duration

	mu      sync.Mutex
	running map[types.UID]*pod
	nextIP  int
	errs    []error
}

// pod is one pod the node runs.
type pod struct {
	name     string
	run      Running
	backed   bool
	ready    bool
	restarts int32
	since    metav1.Time
}

// StartNode starts a node stand-in for namespace ns; backer may be nil.
// It stops when the test ends, stopping every process it started.
func (cp *ControlPlane) StartNode(t testing.TB, ns string, backer Backer) *Node {
	t.Helper()
	c := cp.Client(t)
	n := &Node{client: c, ns: ns, backer: backer, interval: 150 * time.Millisecond, running: map[types.UID]*pod{}}
	ctx, cancel := context.WithCancel(context.Background())
	if err := ensureNode(ctx, c); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.loop(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		n.stopAll()
		for _, err := range n.Errors() {
			t.Errorf("node stand-in: %v", err)
		}
	})
	return n
}

// Errors are the errors passes met that were not conflicts (which the
// next pass retries).
func (n *Node) Errors() []error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]error(nil), n.errs...)
}

func ensureNode(ctx context.Context, c kubernetes.Interface) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName, Labels: map[string]string{corev1.LabelHostname: NodeName}}}
	_, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node: %w", err)
	}
	return nil
}

func (n *Node) loop(ctx context.Context) {
	t := time.NewTicker(n.interval)
	defer t.Stop()
	for {
		n.record(n.pass(ctx))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// record keeps a pass's errors, each on its own: conflicts and objects
// gone meanwhile are retried by the next pass, not errors.
func (n *Node) record(errs []error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, err := range errs {
		if err == nil || errors.Is(err, context.Canceled) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		if len(n.errs) < 20 {
			n.errs = append(n.errs, err)
		}
	}
}

// pass brings pods and claims one step closer to what a kubelet and a
// volume provisioner would make of them.
func (n *Node) pass(ctx context.Context) []error {
	list, err := n.client.CoreV1().Pods(n.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []error{fmt.Errorf("list pods: %w", err)}
	}
	seen := map[types.UID]bool{}
	var errs []error
	for i := range list.Items {
		p := &list.Items[i]
		seen[p.UID] = true
		errs = append(errs, n.sync(ctx, p))
	}
	n.forget(seen)
	return append(errs, n.bindClaims(ctx)...)
}

// sync moves one pod along: bind, start, report, restart, or remove.
func (n *Node) sync(ctx context.Context, p *corev1.Pod) error {
	switch {
	case p.DeletionTimestamp != nil:
		n.stop(p.UID)
		pre := metav1.Preconditions{UID: &p.UID}
		err := n.client.CoreV1().Pods(n.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &pre})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove pod %s: %w", p.Name, err)
		}
		return nil
	case p.Spec.NodeName == "":
		return n.bind(ctx, p)
	}
	r, err := n.ensureRunning(ctx, p)
	if err != nil {
		return err
	}
	return n.report(ctx, p, r)
}

func (n *Node) bind(ctx context.Context, p *corev1.Pod) error {
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: NodeName}}
	if err := n.client.CoreV1().Pods(n.ns).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("bind pod %s: %w", p.Name, err)
	}
	return nil
}

// ensureRunning starts the pod's process if it has none, or again if it
// ended.
func (n *Node) ensureRunning(ctx context.Context, p *corev1.Pod) (*pod, error) {
	n.mu.Lock()
	r := n.running[p.UID]
	n.mu.Unlock()
	if r != nil && (r.run.Exited == nil || !r.run.Exited() || p.Spec.RestartPolicy == corev1.RestartPolicyNever) {
		return r, nil
	}
	run, backed := Running{}, false
	if n.backer != nil {
		var err error
		if run, backed, err = n.backer.Start(ctx, p); err != nil {
			return nil, fmt.Errorf("start pod %s: %w", p.Name, err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !backed {
		n.nextIP++
		run = Running{IP: fmt.Sprintf("127.0.%d.%d", 200+n.nextIP/250, 1+n.nextIP%250)}
	}
	next := &pod{name: p.Name, run: run, backed: backed, since: metav1.Now()}
	if r != nil {
		next.restarts = r.restarts + 1
	}
	n.running[p.UID] = next
	return next, nil
}

// report writes the pod's status when its phase, IP or readiness changed.
func (n *Node) report(ctx context.Context, p *corev1.Pod, r *pod) error {
	ready := r.run.Ready == nil || r.run.Ready(ctx)
	n.mu.Lock()
	if ready != r.ready {
		r.ready, r.since = ready, metav1.Now()
	}
	st := podStatus(p, r)
	n.mu.Unlock()
	if sameStatus(p.Status, st) {
		return nil
	}
	p = p.DeepCopy()
	p.Status = st
	if _, err := n.client.CoreV1().Pods(n.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("report pod %s: %w", p.Name, err)
	}
	return nil
}

func sameStatus(a, b corev1.PodStatus) bool {
	if a.Phase != b.Phase || a.PodIP != b.PodIP || len(a.ContainerStatuses) != len(b.ContainerStatuses) {
		return false
	}
	for i := range a.ContainerStatuses {
		if a.ContainerStatuses[i].Ready != b.ContainerStatuses[i].Ready || a.ContainerStatuses[i].RestartCount != b.ContainerStatuses[i].RestartCount {
			return false
		}
	}
	return true
}

func podStatus(p *corev1.Pod, r *pod) corev1.PodStatus {
	cond := func(t corev1.PodConditionType, ok bool, since metav1.Time) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: since}
	}
	start := r.since
	if p.Status.StartTime != nil {
		start = *p.Status.StartTime
	}
	st := corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: "127.0.0.1", PodIP: r.run.IP, PodIPs: []corev1.PodIP{{IP: r.run.IP}},
		HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}, StartTime: &start,
		// The API server sets the class from the requests (immutable).
		QOSClass: cmp.Or(p.Status.QOSClass, corev1.PodQOSBestEffort),
		Conditions: []corev1.PodCondition{
			cond(corev1.PodScheduled, true, start), cond(corev1.PodInitialized, true, start),
			cond(corev1.ContainersReady, r.ready, r.since), cond(corev1.PodReady, r.ready, r.since),
		},
	}
	for _, c := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, ContainerID: "testbed://" + string(p.UID) + "/" + c.Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: start, FinishedAt: start}},
		})
	}
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: r.ready, Started: new(true), RestartCount: r.restarts,
			ContainerID: "testbed://" + string(p.UID) + "/" + c.Name,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: r.since}},
		})
	}
	ended(p, r, &st)
	return st
}

// ended reports a pod that is not restarted and whose process ended as a
// kubelet does: Succeeded or Failed, its containers terminated with the
// process's exit code and message.
func ended(p *corev1.Pod, r *pod, st *corev1.PodStatus) {
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever || r.run.Exited == nil || !r.run.Exited() {
		return
	}
	var code int32
	var msg string
	if r.run.Outcome != nil {
		code, msg = r.run.Outcome()
	}
	st.Phase = corev1.PodSucceeded
	if code != 0 {
		st.Phase = corev1.PodFailed
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		cs.Ready, cs.Started = false, new(false)
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg, StartedAt: r.since, FinishedAt: metav1.Now()}}
	}
	for i := range st.Conditions {
		if t := st.Conditions[i].Type; t == corev1.ContainersReady || t == corev1.PodReady {
			st.Conditions[i].Status = corev1.ConditionFalse
		}
	}
}

// stop stops the process of a pod being deleted.
func (n *Node) stop(uid types.UID) {
	n.mu.Lock()
	r := n.running[uid]
	delete(n.running, uid)
	n.mu.Unlock()
	if r != nil && r.run.Stop != nil {
		r.run.Stop()
	}
}

// forget stops the processes of pods that are gone (deleted with no
// grace, or with their namespace).
func (n *Node) forget(seen map[types.UID]bool) {
	n.mu.Lock()
	var gone []types.UID
	for uid := range n.running {
		if !seen[uid] {
			gone = append(gone, uid)
		}
	}
	n.mu.Unlock()
	for _, uid := range gone {
		n.stop(uid)
	}
}

func (n *Node) stopAll() {
	n.forget(map[types.UID]bool{})
}

// bindClaims marks pending claims bound with the capacity they request,
// and grows a bound claim's capacity to a larger request.
func (n *Node) bindClaims(ctx context.Context) []error {
	list, err := n.client.CoreV1().PersistentVolumeClaims(n.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []error{fmt.Errorf("list claims: %w", err)}
	}
	var errs []error
	for i := range list.Items {
		c := &list.Items[i]
		want := c.Spec.Resources.Requests[corev1.ResourceStorage]
		have := c.Status.Capacity[corev1.ResourceStorage]
		if c.Status.Phase == corev1.ClaimBound && want.Cmp(have) <= 0 {
			continue
		}
		c = c.DeepCopy()
		c.Status.Phase = corev1.ClaimBound
		c.Status.AccessModes = c.Spec.AccessModes
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want.DeepCopy()}
		c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: want.DeepCopy()}
		if _, err := n.client.CoreV1().PersistentVolumeClaims(n.ns).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("bind claim %s: %w", c.Name, err))
		}
	}
	return errs
}

// Backers back a pod with the first of them that backs it.
type Backers []Backer

// Start implements Backer.
func (bs Backers) Start(ctx context.Context, pod *corev1.Pod) (Running, bool, error) {
	for _, b := range bs {
		if r, ok, err := b.Start(ctx, pod); ok || err != nil {
			return r, ok, err
		}
	}
	return Running{}, false, nil
}
