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
// on), then on is cordoned while the leader's pod is deleted, again
// until the pod on on wins the Lease (the replacement goes elsewhere).
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
	// on cordoned, the leader's pod made again (elsewhere) while it runs
	// off on, until the follower on on wins the Lease (the new pod may
	// win the race for it); a follower on on made again if none runs
	// elsewhere.
	l.node.Cordon(t, on.Name)
	del := func(p string) error { return c.CoreV1().Pods(l.ns).Delete(l.ctx, p, metav1.DeleteOptions{}) }
	testbed.EventuallyWithin(t, 4*time.Minute, "the runtime's leader on "+on.Name+", its other replica off it", func() (err error) {
		leader, nodeOf, err = state()
		if err != nil {
			return err
		}
		var onIt, off []string
		for p, n := range nodeOf {
			if n == on.Name {
				onIt = append(onIt, p)
			} else {
				off = append(off, p)
			}
		}
		switch {
		case nodeOf[leader] != on.Name && len(onIt) > 0:
			err = del(leader)
		case nodeOf[leader] == on.Name && len(off) == 0:
			for _, p := range onIt {
				if p != leader && err == nil {
					err = del(p)
				}
			}
		case nodeOf[leader] == on.Name:
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Errorf("runtime pods %v, leader %q", nodeOf, leader)
	})
	l.node.Uncordon(t, on.Name)
}
