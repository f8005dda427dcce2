package main

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/runtime/agent/postgres"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// The loss of a whole node, on two real nodes: a PostgreSQL cluster of
// three (its members' preferred anti-affinity spreads them 2+1) with a
// client writing through the -rw Service, then the node that holds the
// primary stops at once, as a crashed host (kubenode.StopNode): its
// kubelet, containerd and every container killed, its links down, so
// the primary neither answers nor refuses. cairn's runtime runs on a
// node that survives: once the cluster is created, the primary's node is
// cordoned and the runtime's pod there deleted, as a person draining it
// would, and uncordoned once both runtime pods and their leader run
// elsewhere (runtimeOff). The runtime fails over to a replica with no
// pull request, and -rw takes writes again. Nothing refuses a
// connection, so the runtime waits for --failover-after-timeouts and
// then, the fenced primary not answering, for the members' lease to end
// before it promotes; the test reports how long that took and the
// acknowledged writes asynchronous replication lost.
func TestRealNodePostgresNodeLoss(t *testing.T) {
	nodeLoss(t, 2, 3, 0)
}

// The loss of the primary's node with synchronous replication (FIRST 1),
// on three real nodes, a member on each: the runtime detaches both
// standbys (the synchronous fence), promotes the one with the most WAL
// without waiting for the old primary's lease, and gives the other its
// primary_conninfo back (the -rw Service, in pods), so it follows the
// new primary, which then acknowledges through it. No acknowledged write
// is lost.
func TestRealNodePostgresNodeLossSync(t *testing.T) {
	events := nodeLoss(t, 3, 3, 1)
	if !strings.Contains(events, postgres.ReasonStandbysDetached) {
		t.Errorf("no %s Event: the failover waited for the lease; the runtime's Events: %s", postgres.ReasonStandbysDetached, events)
	}
}

// nodeLoss runs a cluster of instances members with sync synchronous
// standbys on nodes real nodes, stops the primary's node and waits for
// the failover; it returns the runtime's Events since the stop. With
// synchronous replication, a lost acknowledged write fails the test.
func nodeLoss(t *testing.T, nodes, instances, sync int) string {
	const shop = "shop"
	c := startPgOnNodes(t, nodes, instances, sync)
	l, primary, lost, w := c.l, c.primary, c.node, c.w
	placement := l.podsByNode(contract.Selector(contract.AppPostgres, shop))

	stopped := time.Now()
	l.node.StopNode(t, lost.Name)
	before, _, _ := w.look()
	f := l.failedOver(shop, primary, lost, w, stopped, before)
	if on := l.node.NodeOf(t, l.ns, f.next); on == lost {
		t.Fatalf("the new primary %s runs on %s, the stopped node", f.next, on.Name)
	}
	if sync > 0 {
		// The new primary waits for a standby: the one that was detached
		// too follows it again.
		w.waitAcked(t, "writes through -rw acknowledged by a synchronous standby", before+50)
	}
	time.Sleep(2 * time.Second)
	acked, lostWrites := w.stop(l, shop)
	if acked == 0 {
		t.Fatal("no write was acknowledged")
	}
	events := l.runtimeEvents(stopped)
	t.Logf("steps %v; created in %.1fs; members by node %v; synchronous standbys %d; %s stopped with the primary %s: %s labelled primary after %.1fs, the first write through -rw acknowledged after %.1fs (polled once a pass; the writer's longest outage %s); the runtime's Events: %s; %d writes acknowledged through -rw, %d lost, %d failed",
		c.steps, c.created.Seconds(), placement, sync, lost.Name, primary, f.next, f.labelled.Seconds(), f.firstWrite.Seconds(), f.outage,
		events, acked, lostWrites, w.failed)
	if sync > 0 && lostWrites > 0 {
		t.Errorf("%d acknowledged writes lost with synchronous replication", lostWrites)
	}
	return events
}

// pgOnNodes is a PostgreSQL cluster "shop" on real nodes, created
// through its steps, with a writer through -rw.
type pgOnNodes struct {
	l       *loop
	steps   []string
	created time.Duration
	primary string
	// node is the primary's; the runtime's pods run on others.
	node *kubenode.Node
	w    *pgWriter
}

// startPgOnNodes creates a cluster of instances members with sync
// synchronous standbys on nodes real nodes, moves the runtime off the
// primary's node and starts a writer through -rw, returning once it has
// had 50 writes acknowledged.
func startPgOnNodes(t *testing.T, nodes, instances, sync int) pgOnNodes {
	const shop = "shop"
	start := time.Now()
	spec := pgSpecAt(shop, instances, "15.20")
	if sync > 0 {
		spec["clusters/shop.yaml"] += fmt.Sprintf("  synchronousStandbys: %d\n", sync)
	}
	spec["clusters/shop.yaml"] += smallPostgres
	c := pgOnNodes{l: newNodesLoop(t, nodes, spec, []string{shop}, "postgres-15")}
	c.l.pgSecrets(shop)
	c.steps = c.l.converge(shop, nil)
	testbed.Eventually(t, "a primary and its replicas", func() (err error) { c.primary, err = c.l.primaryOf(shop, instances); return err })
	c.created = time.Since(start)
	c.node = c.l.node.NodeOf(t, c.l.ns, c.primary)
	c.l.runtimeOff(shop, c.node)
	c.w = c.l.startPgWriter(shop)
	c.w.waitAcked(t, "writes through -rw", 50)
	return c
}

// waitAcked waits until the writer has had n writes acknowledged.
func (w *pgWriter) waitAcked(t *testing.T, what string, n int) {
	t.Helper()
	testbed.Eventually(t, what, func() error {
		if got, _, last := w.look(); got < n {
			return fmt.Errorf("%d writes acknowledged; last error: %v", got, last)
		}
		return nil
	})
}

// runtimeEvents are the runtime's Events since a time, each with its
// reason and how long after that time it came (to the second).
func (l *loop) runtimeEvents(since time.Time) string {
	evs, err := l.cp.Client(l.t).CoreV1().Events(l.ns).List(l.ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].FirstTimestamp.Before(&evs.Items[j].FirstTimestamp) })
	var out []string
	for _, e := range evs.Items {
		if e.Source.Component != contract.AppRuntime || e.FirstTimestamp.Time.Before(since.Truncate(time.Second)) {
			continue
		}
		out = append(out, fmt.Sprintf("+%ds %s (%s)", int(e.FirstTimestamp.Sub(since.Truncate(time.Second)).Seconds()), e.Reason, e.Message))
	}
	return strings.Join(out, "; ")
}

// failover is what the test saw of a failover after the loss of a node:
// the new primary, how long after the loss it was labelled and the first
// write through -rw was acknowledged, and the writer's longest outage.
type failover struct {
	next                         string
	labelled, firstWrite, outage time.Duration
}

// failedOver waits until a member other than primary is labelled primary
// and the writer has had ten more writes acknowledged through -rw than
// the before it had when the node stopped; a pull request meanwhile fails
// the test (a failover is the runtime's, not a step's).
func (l *loop) failedOver(cluster, primary string, lost *kubenode.Node, w *pgWriter, stopped time.Time, before int) failover {
	t := l.t
	var f failover
	testbed.EventuallyWithin(t, 4*time.Minute, "a new primary off "+lost.Name+" and writes through -rw again", func() error {
		if o := l.pass()[cluster]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request after the loss of the primary's node: %+v", o)
		}
		n, longest, last := w.look()
		f.outage = max(f.outage, longest)
		if f.firstWrite == 0 && n > before {
			f.firstWrite = time.Since(stopped)
		}
		if f.next == "" {
			roles, err := l.roles(cluster)
			if err != nil {
				return err
			}
			for pod, role := range roles {
				if role == contract.RolePrimary && pod != primary {
					f.next, f.labelled = pod, time.Since(stopped)
				}
			}
			if f.next == "" {
				return fmt.Errorf("roles %v; last write error: %v", roles, last)
			}
		}
		if n < before+10 {
			return fmt.Errorf("%d writes since the loss; last error: %v", n-before, last)
		}
		return nil
	})
	return f
}

// runtimeOff moves every pod of the cluster's runtime, and its leader,
// off node away: its Deployment's two replicas spread over the nodes
// (preferred anti-affinity), so away is cordoned and the runtime's pod
// there deleted, as a person draining that node would; the Deployment
// makes it again elsewhere. away is uncordoned once the leader runs off
// it: it is a node in service when it is lost.
func (l *loop) runtimeOff(cluster string, away *kubenode.Node) {
	t := l.t
	c := l.cp.Client(t)
	sel := labels.SelectorFromSet(contract.Selector(contract.AppRuntime, cluster)).String()
	l.node.Cordon(t, away.Name)
	pods, err := c.CoreV1().Pods(l.ns).List(l.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == away.Name {
			if err := c.CoreV1().Pods(l.ns).Delete(l.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	testbed.EventuallyWithin(t, 2*time.Minute, "the runtime's pods and leader off "+away.Name, func() error {
		pods, err := c.CoreV1().Pods(l.ns).List(l.ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err
		}
		on := map[string]bool{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Spec.NodeName == away.Name || p.DeletionTimestamp != nil || !podIsReady(p.Status.Conditions) {
				return fmt.Errorf("runtime pod %s on %q, ready %v", p.Name, p.Spec.NodeName, podIsReady(p.Status.Conditions))
			}
			on[p.Name] = true
		}
		lease, err := c.CoordinationV1().Leases(l.ns).Get(l.ctx, contract.Runtime(cluster), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if h := lease.Spec.HolderIdentity; h == nil || !on[*h] || len(on) < 2 {
			return fmt.Errorf("runtime pods %v, leader %v", on, h)
		}
		return nil
	})
	l.node.Uncordon(t, away.Name)
}

// podsByNode names the pods of set by the node each runs on.
func (l *loop) podsByNode(set map[string]string) map[string]string {
	pods, err := l.cp.Client(l.t).CoreV1().Pods(l.ns).List(l.ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
	if err != nil {
		l.t.Fatal(err)
	}
	by := map[string][]string{}
	for _, p := range pods.Items {
		by[p.Spec.NodeName] = append(by[p.Spec.NodeName], p.Name)
	}
	out := map[string]string{}
	for n, names := range by {
		sort.Strings(names)
		out[n] = strings.Join(names, ",")
	}
	return out
}

// podIsReady reports a pod's Ready condition.
func podIsReady(conds []corev1.PodCondition) bool {
	for _, c := range conds {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
