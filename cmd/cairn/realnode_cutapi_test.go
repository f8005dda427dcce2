package main

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// The primary's node is cut off from the machine only
// (kubenode.HostLink): from the API server and the cluster's DNS, while
// its replicas and the runtime, on the other nodes, still reach it, with
// synchronous replication (FIRST 1). Nothing looks wrong from outside:
// the writer goes on through -rw and the runtime does not fail over. But
// the primary cannot confirm its role label, so it stops itself when its
// lease (--lease-ttl, 30 s) ends: a cut from the API server alone costs
// an outage of the lease plus a failover (docs/runtime.md, "Never two
// primaries", what the lease costs). This test measures that outage and holds what must
// hold meanwhile: the old primary takes no write after its lease, no
// acknowledged write is lost, and, healed, it rejoins as a replica with
// no pull request and no drift.
func TestRealNodePostgresCutFromAPIServer(t *testing.T) {
	const shop = "shop"
	c := startPgOnNodes(t, 3, 3, 1)
	l, primary, cut, w := c.l, c.primary, c.node, c.w
	pod, err := l.cp.Client(t).CoreV1().Pods(l.ns).Get(l.ctx, primary, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cutAt := time.Now()
	l.node.Cut(t, cut.Name, kubenode.HostLink)
	inside := l.sampleInside(shop, cut, pod.Status.PodIP)
	// The writer outside goes on through -rw: the Service's address
	// still leads to the old primary, over the other nodes.
	before, _, _ := w.look()
	w.waitAcked(t, "writes through -rw to the old primary while it is cut off from the API server", before+20)
	var next string
	var labelled time.Duration
	var longest time.Duration
	testbed.EventuallyWithin(t, 4*time.Minute, "a new primary after the old one's lease", func() error {
		if o := l.pass()[shop]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request while the primary's node is cut off: %+v", o)
		}
		_, outage, last := w.look()
		longest = max(longest, outage)
		roles, err := l.roles(shop)
		if err != nil {
			return err
		}
		for p, role := range roles {
			if role == contract.RolePrimary && p != primary {
				next, labelled = p, time.Since(cutAt)
				return nil
			}
		}
		return fmt.Errorf("roles %v; last write error: %v", roles, last)
	})
	after, _, _ := w.look()
	testbed.Eventually(t, "writes through -rw to the new primary", func() error {
		n, outage, last := w.look()
		longest = max(longest, outage)
		if n < after+20 {
			return fmt.Errorf("%d writes acknowledged since %s was labelled primary; last error: %v", n-after, next, last)
		}
		return nil
	})
	acks, lastAck, tries := inside.stop()
	rejoined := l.healed(shop, 3, cut, primary, next)
	acked, lostWrites := w.stop(l, shop)
	lostInside := l.lostInside(shop, inside)
	window := time.Duration(0)
	if acks > 0 {
		window = lastAck.Sub(cutAt)
	}
	t.Logf("%s cut off from the API server and the machine with the primary %s: %s labelled primary after %.1fs, the writer's longest outage %s; inside, %d of %d writes to %s acknowledged, the last %.1fs after the cut, %d of them lost; healed, %s was a replica again %.1fs later; the runtime's Events: %s; %d writes acknowledged through -rw, %d lost, %d failed",
		cut.Name, primary, next, labelled.Seconds(), longest, acks, tries, primary, window.Seconds(), lostInside,
		primary, rejoined.Seconds(), l.runtimeEvents(cutAt), acked, lostWrites, w.failed)
	if tries == 0 {
		t.Fatal("the sampler inside the node never tried a write")
	}
	if acks == 0 {
		t.Error("the old primary acknowledged nothing inside its node after the cut: it stopped before its lease ended")
	}
	// Its lease ends at most 30 s after the cut (its last confirmation
	// came before the cut), and the watchdog stops the server then.
	if window > 33*time.Second {
		t.Errorf("the old primary acknowledged a write %s after the cut, past its lease (30 s) and the margin", window)
	}
	if lostWrites > 0 || lostInside > 0 {
		t.Errorf("acknowledged writes lost with synchronous replication: %d through -rw, %d inside", lostWrites, lostInside)
	}
	if o := l.pass()[shop]; o.Action == publish.ActionOpened {
		t.Fatalf("a pull request after the cut healed: %+v", o)
	}
	l.noDrift("after the cut from the API server healed")
}
