package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/runtime/agent/postgres"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// A network partition on three real nodes, a member on each, with
// synchronous replication (FIRST 1): the primary's node is cut off from
// everything (kubenode.Partition: its packets dropped, nothing refuses),
// and everything on it keeps running, its primary too, which goes on
// taking connections from inside the partition. The runtime, on another
// node, fails over with the synchronous fence. A sampler inside the
// partition writes to the old primary the whole time: it is never
// acknowledged, so no two members acknowledge writes at once, and the
// writer outside loses no acknowledged write. Healed, the old primary
// finds itself labelled fenced, stops, is rewound and follows the new
// primary; the next pass opens no pull request and Flux finds no drift.
func TestRealNodePostgresPartitionSync(t *testing.T) {
	partitionWith(t, 1, kubenode.AllLinks, false)
}

// The same with asynchronous replication: the old primary acknowledges
// writes inside the partition until its lease ends, and the runtime
// promotes only after that lease plus 3 s, so the last write the old
// primary acknowledged comes before the first the new one does. The
// writes it acknowledged are lost with it (asynchronous replication's
// documented bound: --lease-ttl); the test reports how many and for how
// long. Then, on the healed cluster, the new primary's server is
// OOM-killed under its memory limit and recovers in place
// (oomKilledInPlace).
func TestRealNodePostgresPartition(t *testing.T) {
	l, primary := partitionWith(t, 0, kubenode.AllLinks, false)
	l.oomKilledInPlace("shop", primary)
}

// The primary's node is cut off from the other nodes only
// (kubenode.LANLink): from its replicas and the runtime, not from the
// API server, with asynchronous replication. The runtime fails over as
// in a partition; the old primary, which still reaches the API server,
// finds itself labelled fenced at its next confirmation and stops then,
// well before its lease would end, while the runtime still waits for the
// lease before it promotes (it cannot know the old primary heard). What
// the old primary acknowledged inside meanwhile is lost, as in a
// partition.
func TestRealNodePostgresCutFromReplicas(t *testing.T) {
	partitionWith(t, 0, kubenode.LANLink, false)
}

// partitionWith cuts the primary's node off the networks of links, with
// sync synchronous standbys and, withLeader, the runtime's leader on that
// node, and follows the failover, the old primary inside and the heal;
// it returns the loop and the new primary.
func partitionWith(t *testing.T, sync int, links kubenode.Links, withLeader bool) (*loop, string) {
	const shop = "shop"
	c := startPgOnNodes(t, 3, 3, sync)
	l, primary, cut, w := c.l, c.primary, c.node, c.w
	if withLeader {
		l.leaderOnto(shop, cut)
	}
	pod, err := l.cp.Client(t).CoreV1().Pods(l.ns).Get(l.ctx, primary, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cutAt := time.Now()
	l.node.Cut(t, cut.Name, links)
	inside := l.sampleInside(shop, cut, pod.Status.PodIP)
	before, _, _ := w.look()
	f := l.failedOver(shop, primary, cut, w, cutAt, before)
	firstOutside := cutAt.Add(f.firstWrite)
	if sync > 0 {
		w.waitAcked(t, "writes through -rw acknowledged by a synchronous standby", before+50)
	}
	// Inside, the old primary runs on, its sampler writing to it: for
	// 10 s more with synchronous replication (healed within its lease,
	// it hears it is fenced); past the new primary's promotion, which
	// came after the old one's lease, with asynchronous replication.
	time.Sleep(10 * time.Second)
	acks, lastAck, tries := inside.stop()
	rejoined := l.healed(shop, 3, cut, primary, f.next)
	acked, lostWrites := w.stop(l, shop)
	lostInside := l.lostInside(shop, inside)
	events := l.runtimeEvents(cutAt)
	window := time.Duration(0)
	if acks > 0 {
		window = lastAck.Sub(cutAt)
	}
	t.Logf("synchronous standbys %d; %s cut off (%s) with the primary %s (the runtime's leader too: %v): %s labelled primary after %.1fs, the first write through -rw acknowledged after %.1fs (the writer's longest outage %s); inside the partition %d of %d writes to %s acknowledged, the last %.1fs after the cut, %d of them lost; healed, %s was a replica again %.1fs later; the runtime's Events: %s; %d writes acknowledged through -rw, %d lost, %d failed",
		sync, cut.Name, linksName(links), primary, withLeader, f.next, f.labelled.Seconds(), f.firstWrite.Seconds(), f.outage, acks, tries, primary, window.Seconds(), lostInside,
		primary, rejoined.Seconds(), events, acked, lostWrites, w.failed)
	if tries == 0 {
		t.Fatal("the sampler inside the partition never tried a write")
	}
	if acks > 0 && !lastAck.Before(firstOutside) {
		t.Errorf("two primaries acknowledged writes at once: the old one's last at %s, the new one's first at %s", lastAck.Format(time.RFC3339Nano), firstOutside.Format(time.RFC3339Nano))
	}
	if sync > 0 {
		if acks > 0 {
			t.Errorf("the old primary acknowledged %d writes inside the partition with synchronous replication", acks)
		}
		if lostWrites > 0 {
			t.Errorf("%d acknowledged writes lost with synchronous replication", lostWrites)
		}
		if !strings.Contains(events, postgres.ReasonStandbysDetached) {
			t.Errorf("no %s Event: the failover waited for the lease", postgres.ReasonStandbysDetached)
		}
	} else if bound, why := asyncBound(links); window > bound {
		t.Errorf("the old primary acknowledged writes %s after the cut, past %s", window, why)
	}
	if o := l.pass()[shop]; o.Action == publish.ActionOpened {
		t.Fatalf("a pull request after the partition healed: %+v", o)
	}
	l.noDrift("after the partition healed")
	return l, f.next
}

// asyncBound is how long after a cut an asynchronous old primary may
// still acknowledge writes, and why. Cut off from the API server, until
// its lease ends (its last confirmation, and the last reply of a member
// that followed it, came before the cut), plus the margin. Cut off from
// the other nodes only, it still confirms its label, so it stops at its
// first confirmation after the runtime fenced it: the runtime's
// --failover-after-timeouts (10 s by default), a confirmation interval (a
// quarter of the lease) and the margin.
func asyncBound(links kubenode.Links) (time.Duration, string) {
	if links&kubenode.HostLink != 0 {
		return contract.PostgresLeaseTTL + 3*time.Second, fmt.Sprintf("its lease (%s) and the margin", contract.PostgresLeaseTTL)
	}
	every := contract.PostgresLeaseTTL / 4
	return 10*time.Second + every + 3*time.Second, fmt.Sprintf("the runtime's fence (after 10 s), its next confirmation (every %s) and the margin", every)
}

func linksName(l kubenode.Links) string {
	switch l {
	case kubenode.AllLinks:
		return "from everything"
	case kubenode.LANLink:
		return "from the other nodes"
	case kubenode.HostLink:
		return "from the API server and the machine"
	}
	return fmt.Sprintf("links %b", l)
}

// healed heals node cut and waits until the old primary is a replica of
// next, the cluster's n members healthy; it returns how long that took
// after the heal.
func (l *loop) healed(cluster string, n int, cut *kubenode.Node, primary, next string) time.Duration {
	t := l.t
	healAt := time.Now()
	l.node.Heal(t, cut.Name)
	// A container that exited while cut off restarts after the kubelet's
	// back-off (up to minutes): the bound is generous.
	testbed.EventuallyWithin(t, 6*time.Minute, "the old primary "+primary+" back as a replica", func() error {
		roles, err := l.roles(cluster)
		if err != nil {
			return err
		}
		if p, err := l.primaryOf(cluster, n); err != nil || p != next || roles[primary] != contract.RoleReplica {
			return fmt.Errorf("roles %v (%v)", roles, err)
		}
		return nil
	})
	return time.Since(healAt)
}

// insideSampler writes to a member from inside a partitioned node, as a
// client there would, and counts what is acknowledged.
type insideSampler struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	tries   int
	acks    int
	lastAck time.Time
	acked   []int
}

// sampleInside writes, every 300 ms, one row straight to the member at
// ip from inside node n (its own network namespace), with the -rw
// Service's TLS identity; each write gets 2 s.
func (l *loop) sampleInside(cluster string, n *kubenode.Node, ip string) *insideSampler {
	cfg := l.rwConfig(cluster)
	cfg.Host, cfg.DialFunc = ip, n.DialContext
	cfg.LookupFunc = func(context.Context, string) ([]string, error) { return []string{ip}, nil }
	ctx, cancel := context.WithCancel(l.ctx)
	s := &insideSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for id := -1; ctx.Err() == nil; id-- {
			err := func() error {
				wctx, c := context.WithTimeout(ctx, 2*time.Second)
				defer c()
				conn, err := pgx.ConnectConfig(wctx, cfg)
				if err != nil {
					return err
				}
				defer conn.Close(context.Background())
				_, err = conn.Exec(wctx, "INSERT INTO writes VALUES ($1)", id)
				return err
			}()
			s.mu.Lock()
			s.tries++
			if err == nil {
				s.acks++
				s.lastAck = time.Now()
				s.acked = append(s.acked, id)
			}
			s.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *insideSampler) stop() (acks int, lastAck time.Time, tries int) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks, s.lastAck, s.tries
}

// lostInside counts the writes the sampler had acknowledged that the
// cluster no longer has: with asynchronous replication, those the old
// primary took inside the partition, undone when it was rewound.
func (l *loop) lostInside(cluster string, s *insideSampler) int {
	s.mu.Lock()
	ids := append([]int(nil), s.acked...)
	s.mu.Unlock()
	return l.missing(cluster, ids)
}
