package kubenode

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// Links names the networks a node is cut off from: its link to the
// machine (the API server, CoreDNS, the test's own servers, and the
// machine's direct routes to its pods) and the LAN to the other nodes
// (their pods: replicas, the runtime).
type Links uint32

const (
	// HostLink is the node's link to the machine.
	HostLink Links = 1 << iota
	// LANLink is its link to the other nodes.
	LANLink
	// AllLinks: a partition.
	AllLinks = HostLink | LANLink
)

// Partition cuts node name off every network it is on, as a network
// partition does: the packets of its links to the machine and to the
// other nodes are dropped both ways (iptables DROP in the node's
// namespace, so nothing refuses), while everything on it (kubelet,
// containerd, every container) keeps running and sees nobody. Services
// are routed through another node meanwhile. Heal takes the rules away.
func (c *Cluster) Partition(t testing.TB, name string) { c.Cut(t, name, AllLinks) }

// Cut cuts node name off the networks of links only, as Partition does
// all of them: HostLink alone leaves it the other nodes' pods and takes
// the API server and DNS away; LANLink alone leaves it the API server
// and takes the other nodes' pods away. A node is cut once until Heal.
func (c *Cluster) Cut(t testing.TB, name string, links Links) {
	t.Helper()
	n := c.node(t, name)
	if links&AllLinks == 0 || links&^AllLinks != 0 {
		t.Fatalf("cut node %s: links %b name no link", name, links)
	}
	if !n.cut.CompareAndSwap(0, uint32(links)) {
		t.Fatalf("node %s is already cut off", name)
	}
	if err := cutRules(n.slot, c.linkNames(n, links), "-I"); err != nil {
		t.Fatalf("cut node %s off: %v", name, err)
	}
	t.Cleanup(func() {
		if l := Links(n.cut.Load()); l != 0 && !n.Stopped() {
			_ = cutRules(n.slot, c.linkNames(n, l), "-D")
		}
	})
	// Services are routed through a node: a node cut off from the
	// machine cannot carry them, nor one cut off from the pods it would
	// send them to.
	c.routeServicesAround(t, n)
}

// Heal ends a Partition or Cut: the node's packets flow again.
func (c *Cluster) Heal(t testing.TB, name string) {
	t.Helper()
	n := c.node(t, name)
	l := Links(n.cut.Swap(0))
	if l == 0 {
		t.Fatalf("node %s is not cut off", name)
	}
	if err := cutRules(n.slot, c.linkNames(n, l), "-D"); err != nil {
		t.Fatalf("heal node %s: %v", name, err)
	}
}

// linkNames are the interfaces in n's namespace of links: the LAN only
// where the cluster has several nodes.
func (c *Cluster) linkNames(n *Node, links Links) []string {
	var out []string
	if links&HostLink != 0 {
		out = append(out, n.slot.nodeLink())
	}
	if links&LANLink != 0 && len(c.Nodes) > 1 {
		out = append(out, "lan")
	}
	return out
}

// cutRules inserts (-I) or deletes (-D) the rules that drop every packet
// on the node's links: to and from the node's own processes (INPUT,
// OUTPUT) and its pods' (FORWARD), first in each chain, before
// kube-proxy's.
func cutRules(s slot, links []string, op string) error {
	for _, l := range links {
		for _, rule := range [][]string{
			{"INPUT", "-i", l}, {"OUTPUT", "-o", l}, {"FORWARD", "-i", l}, {"FORWARD", "-o", l},
		} {
			args := append([]string{"-w", op, rule[0]}, rule[1:]...)
			if op == "-I" {
				args = append([]string{"-w", op, rule[0], "1"}, rule[1:]...)
			}
			if err := inNetns(s, "iptables", append(args, "-j", "DROP")...); err != nil {
				return err
			}
		}
	}
	return nil
}

// routeServicesAround routes the Services' range through a node that is
// neither stopped nor cut off, when it went through n.
func (c *Cluster) routeServicesAround(t testing.TB, n *Node) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.via != n {
		return
	}
	for _, o := range c.Nodes {
		if !o.Stopped() && o.cut.Load() == 0 {
			if err := ip("route", "replace", c.services, "via", o.IP); err != nil {
				t.Fatalf("route the Services through %s: %v", o.Name, err)
			}
			c.via = o
			return
		}
	}
}

// DialContext dials from inside the node's network namespace, as a
// process on the node would: what it reaches, and what a Partition cuts
// it off from, is the node's. The socket is made on a thread locked to a
// goroutine of its own, which enters the namespace, dials, and goes back
// to the machine's before it is unlocked. The thread must live on: Go
// ends a thread whose goroutine exits locked, and the kernel then sends
// Pdeathsig to every process started from that thread (the test bed's
// servers). One that cannot go back is parked for good instead.
func (n *Node) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	out := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		back, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			out <- result{err: err}
			return
		}
		defer back.Close()
		f, err := os.Open(filepath.Join("/run/netns", n.slot.netns()))
		if err != nil {
			runtime.UnlockOSThread()
			out <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			out <- result{err: fmt.Errorf("enter node %s's network namespace: %w", n.Name, err)}
			return
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if berr := unix.Setns(int(back.Fd()), unix.CLONE_NEWNET); berr != nil {
			out <- result{conn, err}
			select {} // still in the node's namespace: never run anything else on it
		}
		runtime.UnlockOSThread()
		out <- result{conn, err}
	}()
	r := <-out
	return r.conn, r.err
}
