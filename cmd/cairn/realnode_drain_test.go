package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/runtime/agent/etcd"
	"github.com/cairn-dev/cairn/runtime/agent/postgres"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// drainTimeout bounds each node's drain (kubectl drain --timeout): the
// primary's eviction waits for a switchover, the others for nothing.
const drainTimeout = 5 * time.Minute

// A rolling node upgrade on three real nodes: a PostgreSQL cluster of
// three (asynchronous replication) and an etcd cluster of three, a
// member of each on every node, a client writing to each throughout.
// Every node is drained in turn (kubenode.Drain: kubectl drain's
// evictions through the Eviction API, the budgets cairn renders, the
// real kube-controller-manager keeping their status), the node of the
// PostgreSQL primary first; once drained it is uncordoned (its upgrade
// done), its members come back on their volumes, and the next node is
// drained once both clusters are whole again.
//
// A drain of the primary's node is a switchover, never a failover: the
// primary's budget refuses its eviction until the runtime, seeing the
// node cordoned, has handed the primary over to a replica on another
// node (a SwitchedOver Event naming the drain); no FailoverStarted or
// FailedOver Event ever comes. A drain of the etcd leader's node moves
// leadership first (a LeaderMoved Event naming the node), and the
// members drain one at a time: at least a quorum of them is ready
// throughout. No acknowledged write is lost in either cluster, no pull
// request is opened, and Flux finds no drift at the end. The test
// reports each drain's evictions, how long each pod's eviction was
// refused, and each writer's longest outage. Last, the primary's pod is
// deleted (cleanStopHandedOver): its clean stop is handed over at once.
func TestRealNodeRollingDrain(t *testing.T) {
	const shop, kv = "shop", "kv"
	start := time.Now()
	l := newNodesBed(t, 3, "postgres-15", "etcd-3.7")
	// Each spec names its namespace: the runtimes may then read nodes (a
	// node reader is rendered only for a cluster whose namespace the
	// render knows), which they need to see a drain coming.
	spec := inNamespace(pgSpecAt(shop, 3, "15.20"), l.ns)
	spec["clusters/shop.yaml"] += smallPostgres
	l.begin(spec, []string{shop, kv})
	l.pgSecrets(shop)
	steps := l.converge(shop, nil)
	// The etcd cluster is added once the first runs (converge follows one
	// cluster's pull requests).
	l.editSpec(inNamespace(etcdSpecAt(kv, 3, "3.7.3", smallEtcd), l.ns))
	steps = append(steps, l.converge(kv, nil)...)
	l.eventually("3 healthy voters of "+kv, l.voters(kv, 3))
	primary := l.wholeDrainedClusters(shop, kv)
	created := time.Since(start)
	l.runsByDigest(shop)
	l.runsByDigest(kv)
	// One member of each on every node: a node holding two members of a
	// cluster could not be drained while their volumes stay on it.
	for _, app := range []string{contract.AppPostgres, contract.AppEtcd} {
		cluster := map[string]string{contract.AppPostgres: shop, contract.AppEtcd: kv}[app]
		if on := l.podsByNode(contract.Selector(app, cluster)); len(on) != 3 {
			t.Fatalf("%s's members by node: %v; the members' anti-affinity should put one on each node", cluster, on)
		}
	}

	pw := l.startPgWriter(shop)
	pw.waitAcked(t, "writes through -rw", 50)
	ew := startWriter(l.ctx, l.client(kv, 3))
	etcdFloor := l.readyFloor(contract.Selector(contract.AppEtcd, kv))
	pgFloor := l.readyFloor(contract.Selector(contract.AppPostgres, shop))

	first := l.node.NodeOf(t, l.ns, primary)
	order := []*kubenode.Node{first}
	for _, n := range l.node.Nodes {
		if n != first {
			order = append(order, n)
		}
	}
	var report []string
	switchovers := 0
	for _, n := range order {
		primary = l.wholeDrainedClusters(shop, kv)
		leader := l.etcdLeader(kv)
		hadPrimary := l.node.NodeOf(t, l.ns, primary) == n
		hadLeader := l.node.NodeOf(t, l.ns, leader) == n
		etcdBefore, etcdFailedBefore := ew.look()
		began := time.Now()
		var (
			evicted []kubenode.Evicted
			drained time.Duration
		)
		pgOutage := pw.resumes(t, "the drain of "+n.Name, func() {
			var err error
			if evicted, err = l.node.Drain(t, l.ctx, n.Name, drainTimeout); err != nil {
				t.Fatalf("drain %s (the primary %s on it: %v): %v; the runtimes' Events: %s", n.Name, primary, hadPrimary, err, l.runtimeEvents(began))
			}
			drained = time.Since(began)
		})
		l.eventually("etcd writes after the drain of "+n.Name, func() error {
			if got, _ := ew.look(); got < etcdBefore+10 {
				return fmt.Errorf("%d etcd writes since the drain began", got-etcdBefore)
			}
			return nil
		})
		if o := l.pass()[shop]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request after the drain of %s: %+v", n.Name, o)
		}
		events := l.runtimeEvents(began)
		switched := strings.Contains(events, postgres.ReasonSwitchover+" (switched over from "+primary+" ") &&
			strings.Contains(events, "for the drain of node "+n.Name)
		if hadPrimary && !switched {
			t.Errorf("the drain of %s, the primary %s's node: no SwitchedOver Event for it; the runtimes' Events: %s", n.Name, primary, events)
		}
		if switched {
			switchovers++
		}
		if strings.Contains(events, postgres.ReasonFailoverStarted) || strings.Contains(events, postgres.ReasonFailover+" (") {
			t.Errorf("the drain of %s failed over: %s", n.Name, events)
		}
		if hadLeader && !strings.Contains(events, etcd.ReasonLeaderMoved+" (") {
			t.Errorf("the drain of %s, the etcd leader %s's node: no LeaderMoved Event; the runtimes' Events: %s", n.Name, leader, events)
		}
		_, etcdFailed := ew.look()
		report = append(report, fmt.Sprintf("%s (primary %v, etcd leader %v): drained in %.1fs, evicted %s; the -rw writer's longest outage %s, %d etcd writes failed; Events: %s",
			n.Name, hadPrimary, hadLeader, drained.Seconds(), evicted, pgOutage, etcdFailed-etcdFailedBefore, events))
		l.node.Uncordon(t, n.Name)
	}
	cleanStop := l.cleanStopHandedOver(shop, kv, pw)
	l.wholeDrainedClusters(shop, kv)
	time.Sleep(2 * time.Second)
	pgAcked, pgLost := pw.stop(l, shop)
	etcdAcked, etcdFailed, etcdOutage := ew.stop()
	etcdLost := l.lostWrites(l.client(kv, 3), etcdAcked)
	pgMin, etcdMin := pgFloor(), etcdFloor()
	t.Logf("created in %.1fs (steps %v); drains, each node in turn: %s; %d switchovers; %s; PostgreSQL: %d writes acknowledged through -rw, %d lost, %d failed, at least %d members ready throughout; etcd: %d writes acknowledged, %d lost, %d failed, the longest outage %s, at least %d members ready throughout; the whole test %.1fs",
		created.Seconds(), steps, strings.Join(report, "; "), switchovers, cleanStop, pgAcked, pgLost, pw.failed, pgMin, len(etcdAcked), etcdLost, etcdFailed, etcdOutage, etcdMin, time.Since(start).Seconds())
	if pgLost > 0 || etcdLost > 0 {
		t.Errorf("acknowledged writes lost: %d of %d through -rw, %d of %d to etcd", pgLost, pgAcked, etcdLost, len(etcdAcked))
	}
	if etcdMin < 2 {
		t.Errorf("at one time only %d etcd members were ready: the drain broke the quorum of 3", etcdMin)
	}
	if switchovers == 0 {
		t.Errorf("no drain switched over")
	}
	for _, c := range []string{shop, kv} {
		if o := l.pass()[c]; o.Action == publish.ActionOpened || len(l.openOf(c)) != 0 {
			t.Errorf("a pull request of %s after the drains: %+v, open %d", c, o, len(l.openOf(c)))
		}
	}
	l.noDrift("after the drains")
}

// cleanStopHandedOver deletes the PostgreSQL primary's pod, as a person
// does (kubectl delete pod) or a node's graceful shutdown does to its
// pods: SIGTERM, a fast shutdown whose checkpoint the instance manager
// records. The runtime hands over to a replica at once: a FailedOver
// Event saying the primary stopped cleanly, never after the failover
// timer. It returns a line for the test's log.
func (l *loop) cleanStopHandedOver(pg, kv string, w *pgWriter) string {
	t := l.t
	primary := l.wholeDrainedClusters(pg, kv)
	var (
		next     string
		stopped  time.Time
		labelled time.Duration
	)
	outage := w.resumes(t, "the clean stop of "+primary, func() {
		stopped = time.Now()
		if err := l.cp.Client(t).CoreV1().Pods(l.ns).Delete(l.ctx, primary, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		l.eventually("a new primary after the clean stop of "+primary, func() error {
			roles, err := l.roles(pg)
			if err != nil {
				return err
			}
			for pod, role := range roles {
				if role == contract.RolePrimary && pod != primary {
					next = pod
					return nil
				}
			}
			return fmt.Errorf("roles %v", roles)
		})
		labelled = time.Since(stopped)
	})
	events := l.runtimeEvents(stopped)
	if !strings.Contains(events, postgres.ReasonFailover+" (") || !strings.Contains(events, "stopped cleanly") {
		t.Errorf("the clean stop of the primary %s: no hand-over (a FailedOver Event saying it stopped cleanly); the runtimes' Events: %s", primary, events)
	}
	return fmt.Sprintf("the primary %s's pod deleted: %s labelled primary after %.1fs, the -rw writer's longest outage %s; Events: %s",
		primary, next, labelled.Seconds(), outage, events)
}

// wholeDrainedClusters waits until the PostgreSQL cluster pg has a
// primary and two ready replicas and the etcd cluster kv three healthy
// voters with every pod ready, and returns the primary.
func (l *loop) wholeDrainedClusters(pg, kv string) string {
	var primary string
	testbed.EventuallyWithin(l.t, 4*time.Minute, "both clusters whole", func() (err error) {
		if primary, err = l.primaryOf(pg, 3); err != nil {
			return err
		}
		if err := l.voters(kv, 3)(); err != nil {
			return err
		}
		if n := l.readyPods(contract.Selector(contract.AppEtcd, kv)); n != 3 {
			return fmt.Errorf("%d of %s's pods ready", n, kv)
		}
		// The runtime has labelled the leader, so its budget holds it: a
		// drain started while a new runtime has yet to make its first
		// pass (the last one evicted with the node it ran on) finds the
		// leader labelled a follower from before, as an operator who does
		// not wait for the budgets to be whole would.
		leaders := map[string]string{}
		maps.Copy(leaders, contract.Selector(contract.AppEtcd, kv))
		leaders[contract.LabelRole] = contract.RoleLeader
		if n := l.readyPods(leaders); n != 1 {
			return fmt.Errorf("%d of %s's pods labelled leader and ready", n, kv)
		}
		return nil
	})
	return primary
}

// readyPods counts the ready pods of a label set.
func (l *loop) readyPods(set map[string]string) int {
	pods, err := l.cp.Client(l.t).CoreV1().Pods(l.ns).List(l.ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podIsReady(p.Status.Conditions) {
			n++
		}
	}
	return n
}

// readyFloor watches the ready pods of a label set (four times a second)
// until the returned function is called, which returns the fewest seen.
// A read that fails counts nothing.
func (l *loop) readyFloor(set map[string]string) func() int {
	ctx, cancel := context.WithCancel(l.ctx)
	var (
		mu     sync.Mutex
		fewest = -1
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if n := l.readyPods(set); n >= 0 {
				mu.Lock()
				if fewest < 0 || n < fewest {
					fewest = n
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() int {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return fewest
	}
}

// etcdLeader is the pod of the etcd cluster's leader, as its members
// report it.
func (l *loop) etcdLeader(cluster string) string {
	var leader string
	l.eventually("the leader of "+cluster, func() error {
		cli, eps, err := l.etcdClient(cluster, 3)
		if err != nil {
			return err
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
		defer cancel()
		ml, err := cli.MemberList(ctx)
		if err != nil {
			return err
		}
		st, err := cli.Status(ctx, eps[0])
		if err != nil {
			return err
		}
		for _, m := range ml.Members {
			if m.ID == st.Leader {
				leader = m.Name
				return nil
			}
		}
		return fmt.Errorf("no member is the leader %x", st.Leader)
	})
	return leader
}

// inNamespace gives each spec of specs the namespace ns
// (metadata.namespace).
func inNamespace(specs map[string]string, ns string) map[string]string {
	out := map[string]string{}
	for f, doc := range specs {
		head, rest, ok := strings.Cut(doc, "metadata:\n")
		if !ok {
			panic(f + " has no metadata")
		}
		out[f] = head + "metadata:\n  namespace: " + strconv.Quote(ns) + "\n" + rest
	}
	return out
}
