package etcd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// A drain begins by cordoning the node (spec.unschedulable). With the
// leader's node cordoned, the runtime, reading nodes under its rendered
// node reader, moves leadership to a member on an uncordoned node, once,
// with a LeaderMoved Event and lastLeaderMove in its status, while a
// client writes throughout; with every other member's node cordoned too,
// leadership stays and the status says why. The members' pods carry
// their roles throughout (leader, follower: what the drain budgets
// select), a leader that cannot hand over labelled a follower. Real etcd
// 3.7 members, a real kube-apiserver, nodes as API objects, the rendered
// Role and the admission policy.
func TestEtcdLeaderMovedOffCordonedNode(t *testing.T) {
	b := newEtcdBed(t, 3, func(b *etcdBed) { b.nodeReader = true })
	nodes := map[string]string{}
	for i := range 3 {
		member := "e-" + strconv.Itoa(i)
		nodes[member] = b.ns + "-" + string(rune('a'+i))
		b.onNode(member, nodes[member])
	}
	b.run()
	b.waitStatus("three healthy voters", healthyVoters(3))
	w := b.startAckWriter()
	w.waitAcked(b, "writes before the cordon", 20)

	old := leaderOf(*b.status())
	b.waitRoles("the leader labelled", old, "")
	cordonedAt := w.count()
	b.cordon(nodes[old])
	why := fmt.Sprintf("node %s of the leader %s is cordoned", nodes[old], old)
	st := b.waitStatus("leadership moved off "+old, func(st etcdStatus) error {
		if l := leaderOf(st); l == old || l == "" || st.LastLeaderMove == nil {
			return fmt.Errorf("leader %q, last move %+v, message %q", l, st.LastLeaderMove, st.Message)
		}
		return nil
	})
	moved := leaderOf(st)
	movedBy := w.count()
	if lm := st.LastLeaderMove; lm.From != old || lm.To != moved || lm.Reason != why {
		t.Fatalf("last leader move %+v, want from %s to %s: %s", lm, old, moved, why)
	}
	if moved == old || nodes[moved] == nodes[old] {
		t.Fatalf("leadership moved to %s on node %s", moved, nodes[moved])
	}
	// The pass records its Events after its status.
	testbed.Eventually(t, "a LeaderMoved Event", func() error {
		if got := b.leaderMoves(); len(got) != 1 || !strings.Contains(got[0], why) {
			return fmt.Errorf("LeaderMoved Events %q, want one saying %q", got, why)
		}
		return nil
	})
	// Labelled anew: the old leader's budget lets it go now.
	b.waitRoles("the new leader labelled", moved, "")
	after := w.count()
	w.waitAcked(b, "writes after the move", after+20)

	// Every other node cordoned too: the new leader's as well, and no
	// member runs on an uncordoned node.
	for m, n := range nodes {
		if m != old {
			b.cordon(n)
		}
	}
	stays := fmt.Sprintf("node %s of the leader %s is cordoned, but leadership stays: no other healthy voter runs on a node that is not cordoned", nodes[moved], moved)
	b.waitStatus("the status says why leadership stays", func(st etcdStatus) error {
		if !strings.Contains(st.Message, stays) {
			return fmt.Errorf("message %q", st.Message)
		}
		return nil
	})
	// It cannot hand over: labelled a follower, so its drain goes on.
	b.waitRoles("the leader that stays labelled a follower", "", moved)
	b.waitPasses(5)
	st = *b.status()
	if l := leaderOf(st); l != moved || !strings.Contains(st.Message, stays) || st.LastLeaderMove.To != moved {
		t.Fatalf("leader %s, message %q, last move %+v: want %s to keep leading", l, st.Message, st.LastLeaderMove, moved)
	}
	if got := b.leaderMoves(); len(got) != 1 {
		t.Fatalf("LeaderMoved Events %q, want the first only", got)
	}
	after = w.count()
	w.waitAcked(b, "writes while every node is cordoned", after+20)
	w.stop(b, cordonedAt, movedBy)
	for _, err := range b.passErrors() {
		t.Logf("pass error: %v", err)
	}
}

// Without the node reader (a spec without a namespace renders none) the
// runtime may not read nodes: a cordoned leader's node is not seen, so
// leadership stays where it is, and the refusal is no pass error (it is
// logged once); the leader is labelled a follower, so that its drain is
// not held for a move that never comes.
func TestEtcdCordonWithoutNodeReader(t *testing.T) {
	b := newEtcdBed(t, 3)
	nodes := map[string]string{}
	for i := range 3 {
		member := "e-" + strconv.Itoa(i)
		nodes[member] = b.ns + "-" + string(rune('a'+i))
		b.onNode(member, nodes[member])
	}
	b.run()
	leader := leaderOf(b.waitStatus("three healthy voters", healthyVoters(3)))
	b.cordon(nodes[leader])
	b.waitPasses(5)
	st := *b.status()
	if l := leaderOf(st); l != leader || st.LastLeaderMove != nil || st.Message != "" {
		t.Fatalf("leader %s, last move %+v, message %q: want %s to lead, nothing else", l, st.LastLeaderMove, st.Message, leader)
	}
	if got := b.leaderMoves(); len(got) != 0 {
		t.Fatalf("LeaderMoved Events %q", got)
	}
	if errs := b.passErrors(); len(errs) != 0 {
		t.Fatalf("pass errors: %v", errs)
	}
	if !b.members.nodesForbidden.Load() {
		t.Fatal("the runtime read nodes without the node reader")
	}
	// It would never see a drain to hand over for: its leader is
	// labelled a follower, and no budget of its own holds the drain.
	b.waitRoles("every member labelled a follower", "", leader)
}

// onNode creates node (schedulable) if needed and binds member's pod to
// it, as the scheduler would.
func (b *etcdBed) onNode(member, node string) {
	b.t.Helper()
	_, err := b.kube.CoreV1().Nodes().Create(b.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = b.kube.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	err = b.kube.CoreV1().Pods(b.ns).Bind(b.ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: member},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
}

// cordon marks node unschedulable, as kubectl drain does first.
func (b *etcdBed) cordon(node string) {
	b.t.Helper()
	_, err := b.kube.CoreV1().Nodes().Patch(b.ctx, node, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
}

// leaderMoves are the messages of the runtime's LeaderMoved Events.
func (b *etcdBed) leaderMoves() []string {
	var out []string
	for _, e := range b.events() {
		if e.Reason == ReasonLeaderMoved {
			out = append(out, e.Message)
		}
	}
	return out
}

// leaderOf is the member the status says leads; "" when none.
func leaderOf(st etcdStatus) string {
	i := slices.IndexFunc(st.Members, func(m etcdMember) bool { return m.Leader })
	if i < 0 {
		return ""
	}
	return st.Members[i].Name
}

// ackWriter puts keys w-0, w-1, ... one after another through a client
// of every member, a key tried again until etcd acknowledges it; it
// keeps the attempts etcd failed. Unlike writer (membership_test.go),
// each acknowledged write has a key of its own, so that stop can check
// that none is lost.
type ackWriter struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  int
	failed []failedWrite
}

// failedWrite is an attempt etcd failed: the write's number (the writes
// acknowledged before it) and etcd's error.
type failedWrite struct {
	n   int
	err string
}

func (b *etcdBed) startAckWriter() *ackWriter {
	cli := b.etcd()
	ctx, cancel := context.WithCancel(b.ctx)
	w := &ackWriter{cancel: cancel, done: make(chan struct{})}
	b.t.Cleanup(func() { cancel(); <-w.done })
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			key := "w-" + strconv.Itoa(w.count())
			pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
			_, err := cli.Put(pctx, key, key)
			pcancel()
			w.mu.Lock()
			switch {
			case err == nil:
				w.acked++
			case ctx.Err() == nil:
				w.failed = append(w.failed, failedWrite{w.acked, err.Error()})
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *ackWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

func (w *ackWriter) waitAcked(b *etcdBed, what string, n int) {
	b.t.Helper()
	testbed.Eventually(b.t, what, func() error {
		if c := w.count(); c < n {
			return fmt.Errorf("%d of %d writes acknowledged", c, n)
		}
		return nil
	})
}

// stop ends the writer and checks that every acknowledged write is
// there, and that etcd failed only writes from..to (their numbers), and
// those only as a leadership transfer fails them: a leader drops
// proposals while it hands over (etcd's "raft proposal dropped"; the
// client tries again), one just elected refuses them, or an attempt made
// during the hand-over outlasts etcd's request timeout or its own
// deadline (seen on loaded machines: never acknowledged, so it loses
// nothing either way).
func (w *ackWriter) stop(b *etcdBed, from, to int) {
	b.t.Helper()
	w.cancel()
	<-w.done
	cli := b.etcd()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "w-", clientv3.WithPrefix())
	if err != nil {
		b.t.Fatal(err)
	}
	have := map[string]bool{}
	for _, kv := range resp.Kvs {
		have[string(kv.Key)] = true
	}
	for i := range w.acked {
		if !have["w-"+strconv.Itoa(i)] {
			b.t.Errorf("acknowledged write w-%d is missing", i)
		}
	}
	b.t.Logf("%d writes acknowledged; %d attempts failed, writes %d..%d spanning the move: %+v", w.acked, len(w.failed), from, to, w.failed)
	for _, f := range w.failed {
		transfer := strings.Contains(f.err, "raft proposal dropped") || strings.Contains(f.err, "leader changed") ||
			strings.Contains(f.err, "request timed out") || strings.Contains(f.err, context.DeadlineExceeded.Error())
		if f.n < from || f.n > to || !transfer {
			b.t.Errorf("write w-%d failed: %s", f.n, f.err)
		}
	}
}

// waitRoles waits until the pods of the members are labelled follower
// but leader's, labelled leader (none when leader is ""); follower, when
// set, is a member whose pod must be labelled follower.
func (b *etcdBed) waitRoles(what, leader, follower string) {
	b.t.Helper()
	testbed.Eventually(b.t, what, func() error {
		pods, err := b.kube.CoreV1().Pods(b.ns).List(b.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, p := range pods.Items {
			got[p.Name] = p.Labels[contract.LabelRole]
		}
		for name, role := range got {
			want := contract.RoleFollower
			if name == leader {
				want = contract.RoleLeader
			}
			if role != want {
				return fmt.Errorf("roles %v, want %s the leader", got, cmp.Or(leader, "none"))
			}
		}
		if follower != "" && got[follower] != contract.RoleFollower {
			return fmt.Errorf("roles %v, want %s a follower", got, follower)
		}
		return nil
	})
}
