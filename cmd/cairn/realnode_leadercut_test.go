package main

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// The runtime's leader is cut off together with the primary: its pod
// runs on the primary's node, which is partitioned, with synchronous
// replication (FIRST 1). The other runtime replica, on another node,
// takes the leader Lease once it runs out (--leader-lease, 8 s), counts
// the primary's silence afresh (--failover-after-timeouts) and fails over
// with the synchronous fence. The old leader, inside, can reach neither
// the API server nor the replicas, so it changes nothing. Checked as the
// partition is: nothing acknowledged inside, nothing lost, the old
// primary a replica once healed, no pull request, no drift.
func TestRealNodePostgresPartitionWithLeaderSync(t *testing.T) {
	partitionWith(t, 1, kubenode.AllLinks, true)
}

// leaderOnto moves the cluster's runtime leader onto node on, and its
// other replica off it, as a scheduler could have placed them: the
// other nodes are cordoned while the follower's pod is made again (on
// on), then on is cordoned while the leader's pod is deleted (its
// replacement goes elsewhere, and the pod on on takes the Lease).
func (l *loop) leaderOnto(cluster string, on *kubenode.Node) {
	t := l.t
	c := l.cp.Client(t)
	sel := labels.SelectorFromSet(contract.Selector(contract.AppRuntime, cluster)).String()
	state := func() (leader string, nodeOf map[string]string, err error) {
		pods, err := c.CoreV1().Pods(l.ns).List(l.ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return "", nil, err
		}
		nodeOf = map[string]string{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || !podIsReady(p.Status.Conditions) {
				return "", nil, fmt.Errorf("runtime pod %s on %q, ready %v", p.Name, p.Spec.NodeName, podIsReady(p.Status.Conditions))
			}
			nodeOf[p.Name] = p.Spec.NodeName
		}
		lease, err := c.CoordinationV1().Leases(l.ns).Get(l.ctx, contract.Runtime(cluster), metav1.GetOptions{})
		if err != nil {
			return "", nil, err
		}
		if h := lease.Spec.HolderIdentity; h != nil && nodeOf[*h] != "" {
			leader = *h
		}
		if leader == "" || len(nodeOf) < 2 {
			return "", nil, fmt.Errorf("runtime pods %v, leader %q", nodeOf, leader)
		}
		return leader, nodeOf, nil
	}
	others := func(do func(testing.TB, string)) {
		for _, n := range l.node.Nodes {
			if n != on {
				do(t, n.Name)
			}
		}
	}
	var leader string
	var nodeOf map[string]string
	testbed.EventuallyWithin(t, 2*time.Minute, "the runtime's pods ready with a leader", func() (err error) {
		leader, nodeOf, err = state()
		return err
	})
	if nodeOf[leader] != on.Name {
		// A follower onto on: the other nodes cordoned, the followers
		// elsewhere made again.
		others(l.node.Cordon)
		for p, n := range nodeOf {
			if p != leader && n != on.Name {
				if err := c.CoreV1().Pods(l.ns).Delete(l.ctx, p, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		testbed.EventuallyWithin(t, 2*time.Minute, "a runtime follower on "+on.Name, func() (err error) {
			leader, nodeOf, err = state()
			for p, n := range nodeOf {
				if err == nil && p != leader && n == on.Name {
					return nil
				}
			}
			return fmt.Errorf("runtime pods %v, leader %q (%v)", nodeOf, leader, err)
		})
		others(l.node.Uncordon)
	}
	// on cordoned, the leader made again elsewhere if it is off on (the
	// follower on on takes the Lease), the followers on on if it is on
	// it (so that one runs elsewhere).
	l.node.Cordon(t, on.Name)
	for p, n := range nodeOf {
		if (p == leader) != (n == on.Name) {
			if err := c.CoreV1().Pods(l.ns).Delete(l.ctx, p, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	testbed.EventuallyWithin(t, 2*time.Minute, "the runtime's leader on "+on.Name+", its other replica off it", func() (err error) {
		leader, nodeOf, err = state()
		if err != nil {
			return err
		}
		off := 0
		for _, n := range nodeOf {
			if n != on.Name {
				off++
			}
		}
		if nodeOf[leader] != on.Name || off == 0 {
			return fmt.Errorf("runtime pods %v, leader %q", nodeOf, leader)
		}
		return nil
	})
	l.node.Uncordon(t, on.Name)
}
