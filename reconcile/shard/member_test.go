package shard

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/testbed"
)

// fleet is members running against a real kube-apiserver, with a watcher
// that samples every few milliseconds that no shard has two owners.
type fleet struct {
	t       *testing.T
	client  kubernetes.Interface
	ns      string
	shards  int
	mu      sync.Mutex
	members map[string]*running
	// double is the first time two members owned one shard, if ever.
	double string
}

type running struct {
	*Member
	cancel context.CancelCauseFunc
	done   chan struct{}
}

const testLease = 3 * time.Second

func newFleet(t *testing.T, shards int) *fleet {
	cp := testbed.Start(t)
	f := &fleet{t: t, client: cp.Client(t), ns: cp.Namespace(t, "cairn"), shards: shards, members: map[string]*running{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			f.sample()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if f.double != "" {
			t.Error(f.double)
		}
	})
	return f
}

func (f *fleet) sample() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.shards {
		var owners []string
		for id, m := range f.members {
			if m.ownsShard(s) {
				owners = append(owners, id)
			}
		}
		if len(owners) > 1 && f.double == "" {
			f.double = fmt.Sprintf("shard %d owned by %v at once", s, owners)
		}
	}
}

func (f *fleet) start(id string) *running {
	m, err := New(Config{Client: f.client, Namespace: f.ns, ID: id, Shards: f.shards, LeaseDuration: testLease,
		Log: testbed.Logger(f.t, slog.LevelInfo)})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &running{Member: m, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); _ = m.Run(ctx) }()
	f.t.Cleanup(func() { cancel(nil); <-r.done })
	f.mu.Lock()
	f.members[id] = r
	f.mu.Unlock()
	return r
}

// converged: every shard owned by exactly one of the running members
// ids, the shares within one of each other.
func (f *fleet) converged(ids ...string) error {
	shares := map[string]int{}
	for s := range f.shards {
		var owners []string
		for _, id := range ids {
			if f.members[id].ownsShard(s) {
				owners = append(owners, id)
			}
		}
		if len(owners) != 1 {
			return fmt.Errorf("shard %d owned by %v", s, owners)
		}
		shares[owners[0]]++
	}
	lo, hi := f.shards, 0
	for _, id := range ids {
		lo, hi = min(lo, shares[id]), max(hi, shares[id])
	}
	if hi-lo > 1 {
		return fmt.Errorf("shares %v", shares)
	}
	return nil
}

// On a real API server: three replicas split the shards; one killed
// leaves its Leases held, and its shards move once they expire; one
// stopped releases its Leases, and its shards move at once; never two
// owners of a shard.
func TestMembersOnTheAPIServer(t *testing.T) {
	f := newFleet(t, 8)
	a, b, c := f.start("a"), f.start("b"), f.start("c")
	for _, m := range []*running{a, b, c} {
		select {
		case <-m.Ready():
		case <-time.After(time.Minute):
			t.Fatalf("%s not ready after a minute", m.Identity())
		}
	}
	testbed.Eventually(t, "three replicas split 8 shards", func() error { return f.converged("a", "b", "c") })
	if a.Replicas() != 3 {
		t.Errorf("a counts %d replicas, want 3", a.Replicas())
	}

	// Killed: its Leases stay, held, until they expire.
	killed := c.Owned()
	c.cancel(ErrKilled)
	<-c.done
	start := time.Now()
	l, err := f.client.CoordinationV1().Leases(f.ns).Get(context.Background(), shardLease(killed[0]), metav1.GetOptions{})
	if err != nil || holder(l) != c.Identity() {
		t.Fatalf("shard %d after the kill: %v, held by %q, want still %s", killed[0], err, holder(l), c.Identity())
	}
	testbed.Eventually(t, "the killed replica's shards move", func() error { return f.converged("a", "b") })
	took := time.Since(start)
	t.Logf("a killed replica's shards %v moved after %s (lease %s)", killed, took.Round(time.Millisecond), testLease)
	if took < testLease/2 {
		t.Errorf("the killed replica's shards moved after %s, before its Leases could expire", took)
	}

	// Stopped: its Leases are released and move at once.
	stopped := b.Owned()
	b.cancel(nil)
	<-b.done
	l, err = f.client.CoordinationV1().Leases(f.ns).Get(context.Background(), shardLease(stopped[0]), metav1.GetOptions{})
	if err != nil || holder(l) != "" && holder(l) != a.Identity() {
		t.Fatalf("shard %d after a clean stop: %v, held by %q, want released", stopped[0], err, holder(l))
	}
	testbed.Eventually(t, "the stopped replica's shards move", func() error { return f.converged("a") })
	if a.Replicas() != 1 {
		t.Errorf("a counts %d replicas, want 1", a.Replicas())
	}
}

// Notify reaches every replica's Triggers; and a replica that takes
// shards triggers a pass of its own.
func TestNotifyTriggersEveryReplica(t *testing.T) {
	f := newFleet(t, 2)
	a, b := f.start("a"), f.start("b")
	testbed.Eventually(t, "two replicas split 2 shards", func() error { return f.converged("a", "b") })
	for _, m := range []*running{a, b} {
		select {
		case <-m.Triggers(): // it took shards
		default:
			t.Errorf("%s took shards and was not triggered", m.Identity())
		}
	}
	if err := a.Notify(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*running{a, b} {
		select {
		case <-m.Triggers():
		case <-time.After(time.Minute):
			t.Fatalf("%s not triggered a minute after Notify", m.Identity())
		}
	}
	leases, err := f.client.CoordinationV1().Leases(f.ns).List(context.Background(), metav1.ListOptions{LabelSelector: LabelLease})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range leases.Items {
		names = append(names, l.Name+"="+l.Labels[LabelLease])
	}
	slices.Sort(names)
	want := []string{"cairn-replica-0=replica", "cairn-replica-1=replica", "cairn-shard-0=shard", "cairn-shard-1=shard", "cairn-trigger=trigger"}
	if !slices.Equal(names, want) {
		t.Errorf("leases %v, want %v", names, want)
	}
}

func TestConfigIsChecked(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{ID: "a"}, "shard member: no namespace for the leases"},
		{Config{Namespace: "ns"}, "shard member: no replica ID"},
		{Config{Namespace: "ns", ID: "a", Shards: MaxShards + 1}, "shard member: 1025 shards: want 1 to 1024"},
		{Config{Namespace: "ns", ID: "a", LeaseDuration: 1500 * time.Millisecond}, "shard member: lease duration 1.5s: want whole seconds, at least 2s"},
		{Config{Namespace: "ns", ID: "a", LeaseDuration: time.Second}, "shard member: lease duration 1s: want whole seconds, at least 2s"},
	} {
		_, err := newMember(c.cfg, nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := New(Config{Namespace: "ns", ID: "a"}); err == nil || err.Error() != "shard member: no Kubernetes client" {
		t.Errorf("no client: %v", err)
	}
}
