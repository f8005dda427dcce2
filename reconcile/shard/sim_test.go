package shard

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-dev/cairn/planner/plan"
)

func refOf(kind, ns, name string) plan.ClusterRef {
	return plan.ClusterRef{Kind: kind, Namespace: ns, Name: name}
}

// world is a fleet in simulated time: Leases kept with the API server's
// compare-and-swap (memory, in the spirit of hashicorp/raft's in-memory
// stores: the semantics the member relies on, nothing more), and members
// whose clocks each run at their own rate from their own offset. The
// real API server is in member_test.go; here the world can cut a replica
// off, lose the answer to a write it applied, and kill, for hundreds of
// lease durations in a second.
type world struct {
	t       *testing.T
	r       *rand.Rand
	now     time.Time // real time
	rv      int
	leases  map[string]*coordv1.Lease
	members []*simMember
	// last is, by shard, the member last seen owning it and when.
	last   map[int]ownedAt
	shards int
	// moves and owned count shard moves and the checks that found a
	// shard owned, so a test knows the checks were not idle.
	moves, owned, checks int
	margin               time.Duration
}

type ownedAt struct {
	m  *simMember
	at time.Time
}

type simMember struct {
	*Member
	name   string
	rate   float64
	offset time.Duration
	next   time.Time // its next round, real time
	cut    bool      // its calls fail
	dead   bool      // it runs no more rounds
	// stopped: it stopped cleanly, its writers first, so that its
	// shards may move at once.
	stopped bool
	died    time.Time
}

// gone: dead for two lease durations, long past owning anything; the
// checks skip it.
func (sm *simMember) gone(now time.Time) bool { return sm.dead && now.Sub(sm.died) > 2*dur }

var errCut = errors.New("dial tcp: connection refused")

func newWorld(t *testing.T, seed uint64, shards int) *world {
	return &world{t: t, r: rand.New(rand.NewPCG(seed, seed)), now: t0, leases: map[string]*coordv1.Lease{},
		last: map[int]ownedAt{}, shards: shards}
}

func (w *world) add(name string) *simMember {
	sm := &simMember{name: name, rate: 0.97 + 0.06*w.r.Float64(), offset: time.Duration(w.r.IntN(7200)-3600) * time.Second, next: w.now}
	m, err := newMember(Config{Namespace: "ns", ID: name, Shards: w.shards, LeaseDuration: dur}, simStore{w, sm})
	if err != nil {
		w.t.Fatal(err)
	}
	m.now = func() time.Time { return t0.Add(sm.offset + time.Duration(float64(w.now.Sub(t0))*sm.rate)) }
	sm.Member, w.margin = m, m.margin
	w.members = append(w.members, sm)
	return sm
}

// step advances real time by dt, runs the rounds due, and checks.
func (w *world) step(dt time.Duration) {
	w.now = w.now.Add(dt)
	w.check()
	for _, sm := range w.members {
		if sm.dead || w.now.Before(sm.next) {
			continue
		}
		_ = sm.round(context.Background())
		sm.next = w.now.Add(time.Duration(float64(sm.period) / sm.rate))
	}
}

// check: at most one member owns a shard now, and a shard that changes
// owner was owned by nobody for a while between (the margin that lets a
// write begun before the move end before it).
func (w *world) check() {
	w.t.Helper()
	for s := range w.shards {
		var owners []*simMember
		for _, sm := range w.members {
			if !sm.gone(w.now) && sm.ownsShard(s) {
				owners = append(owners, sm)
			}
		}
		switch {
		case len(owners) > 1:
			w.t.Fatalf("at %s shard %d is owned by %s and %s", w.now.Sub(t0), s, owners[0].name, owners[1].name)
		case len(owners) == 1:
			o := owners[0]
			if l := w.last[s]; l.m != nil && l.m != o && !l.m.stopped && w.now.Sub(l.at) < w.margin/2 {
				w.t.Fatalf("at %s shard %d moved from %s to %s after %s unowned, under half the margin %s",
					w.now.Sub(t0), s, l.m.name, o.name, w.now.Sub(l.at), w.margin)
			}
			if l := w.last[s]; l.m != nil && l.m != o {
				w.moves++
			}
			w.last[s] = ownedAt{o, w.now}
			w.owned++
		}
		w.checks++
	}
}

// simStore is one member's view of the world's Leases: each call takes a
// little time, and fails while the member is cut off — a write half the
// time after it was applied, its answer lost.
type simStore struct {
	w  *world
	sm *simMember
}

var leasesResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (s simStore) call(write bool, apply func() error) error {
	s.w.now = s.w.now.Add(time.Duration(s.w.r.IntN(50)) * time.Millisecond)
	s.w.check()
	defer s.w.check()
	if !s.sm.cut {
		return apply()
	}
	if write && s.w.r.IntN(2) == 0 {
		_ = apply()
	}
	return errCut
}

func (s simStore) list(context.Context) ([]coordv1.Lease, error) {
	var out []coordv1.Lease
	err := s.call(false, func() error {
		for _, l := range s.w.leases {
			out = append(out, *l.DeepCopy())
		}
		return nil
	})
	return out, err
}

func (s simStore) get(_ context.Context, name string) (*coordv1.Lease, error) {
	var out *coordv1.Lease
	err := s.call(false, func() error {
		l, ok := s.w.leases[name]
		if !ok {
			return apierrors.NewNotFound(leasesResource, name)
		}
		out = l.DeepCopy()
		return nil
	})
	return out, err
}

func (s simStore) create(_ context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	var out *coordv1.Lease
	err := s.call(true, func() error {
		if _, ok := s.w.leases[l.Name]; ok {
			return apierrors.NewAlreadyExists(leasesResource, l.Name)
		}
		out = s.w.put(l)
		return nil
	})
	return out, err
}

func (s simStore) update(_ context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	var out *coordv1.Lease
	err := s.call(true, func() error {
		cur, ok := s.w.leases[l.Name]
		switch {
		case !ok:
			return apierrors.NewNotFound(leasesResource, l.Name)
		case cur.ResourceVersion != l.ResourceVersion:
			return apierrors.NewConflict(leasesResource, l.Name, errors.New("the object has been modified"))
		}
		out = s.w.put(l)
		return nil
	})
	return out, err
}

func (w *world) put(l *coordv1.Lease) *coordv1.Lease {
	w.rv++
	stored := l.DeepCopy()
	stored.ResourceVersion = strconv.Itoa(w.rv)
	w.leases[l.Name] = stored
	return stored.DeepCopy()
}

// stop stops sm cleanly, as cmd/cairn does once its loop has stopped.
func (w *world) stop(sm *simMember) {
	sm.stop(nil)
	sm.dead, sm.stopped, sm.died = true, true, w.now
}

// running are the members still running rounds.
func (w *world) running() []*simMember {
	var out []*simMember
	for _, sm := range w.members {
		if !sm.dead {
			out = append(out, sm)
		}
	}
	return out
}

// chaos does one random thing to the fleet, now and then.
func (w *world) chaos(n *int) {
	run := w.running()
	sm := run[w.r.IntN(len(run))]
	switch x := w.r.IntN(1000); {
	case x < 4 && len(run) > 1: // killed: its Leases expire
		sm.dead, sm.died = true, w.now
	case x < 6 && len(run) > 1: // stopped: its Leases are released
		w.stop(sm)
	case x < 12 && len(run) < 6:
		*n++
		w.add(fmt.Sprintf("r%d", *n))
	case x < 20:
		sm.cut = true
	case x < 40:
		sm.cut = false
	}
}

// converged: every shard owned by exactly one running member, the shares
// within one of each other; nil when so.
func (w *world) converged() error {
	run := w.running()
	shares := map[string]int{}
	for s := range w.shards {
		var owners []string
		for _, sm := range run {
			if sm.ownsShard(s) {
				owners = append(owners, sm.name)
			}
		}
		if len(owners) != 1 {
			return fmt.Errorf("shard %d owned by %v", s, owners)
		}
		shares[owners[0]]++
	}
	lo, hi := w.shards, 0
	for _, sm := range run {
		lo, hi = min(lo, shares[sm.name]), max(hi, shares[sm.name])
	}
	if hi-lo > 1 {
		return fmt.Errorf("shares %v differ by more than one", shares)
	}
	return nil
}

// The fleet under chaos — replicas cut off and back, writes applied with
// their answers lost, replicas killed, stopped and added, clocks at
// different rates and offsets — never has two owners of a shard, and a
// shard that moves is unowned for a while between; once the chaos stops,
// every shard is owned by one replica and the shares differ by at most
// one.
func TestFleetUnderChaos(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			w := newWorld(t, seed, 2+int(seed)*4)
			n := 3
			for i := range n {
				w.add(fmt.Sprintf("r%d", i+1))
			}
			const dt = 100 * time.Millisecond
			for range 15 * 60 * 10 { // 15 minutes
				w.step(dt)
				w.chaos(&n)
			}
			for _, sm := range w.members {
				sm.cut = false
			}
			var err error
			for range 5 * 60 * 10 {
				w.step(dt)
				if err = w.converged(); err == nil {
					break
				}
			}
			if err != nil {
				t.Fatalf("5 minutes after the chaos: %v", err)
			}
			if w.moves < 10 || w.owned < w.checks/3 {
				t.Fatalf("%d moves, shards owned at %d of %d checks: the chaos left too little to check", w.moves, w.owned, w.checks)
			}
			t.Logf("%d replicas, %d shards, %d moves, owned at %d%% of checks", len(w.members), w.shards, w.moves, 100*w.owned/w.checks)
		})
	}
}

// A killed replica's shards move within about a lease duration; a
// stopped one's at once; and a new replica gets its share.
func TestSharesMove(t *testing.T) {
	w := newWorld(t, 99, 12)
	a, b, c := w.add("a"), w.add("b"), w.add("c")
	until := func(what string, limit time.Duration) time.Duration {
		t.Helper()
		start := w.now
		for w.now.Sub(start) < limit {
			w.step(50 * time.Millisecond)
			if w.converged() == nil {
				return w.now.Sub(start)
			}
		}
		t.Fatalf("%s: %v after %s", what, w.converged(), limit)
		return 0
	}
	until("three replicas start", 2*dur)
	if got := []int{len(a.Owned()), len(b.Owned()), len(c.Owned())}; !slices.Equal(got, []int{4, 4, 4}) {
		t.Fatalf("shares %v, want 4 each", got)
	}
	c.dead, c.died = true, w.now
	if took := until("c killed", 3*dur); took < dur {
		t.Errorf("c's shards moved after %s, before its leases could expire", took)
	} else {
		t.Logf("a killed replica's shards moved after %s (lease %s)", took, dur)
	}
	w.stop(b)
	if took := until("b stopped", dur); took >= dur/2 {
		t.Errorf("b released its shards, yet they moved only after %s", took)
	}
	d := w.add("d")
	until("d added", 2*dur)
	if len(a.Owned()) != 6 || len(d.Owned()) != 6 {
		t.Errorf("shares a %v d %v, want 6 each", a.Owned(), d.Owned())
	}
	if !strings.HasPrefix(d.Identity(), "d_") {
		t.Errorf("identity %s does not start with the replica ID", d.Identity())
	}
}

// Replicas that map clusters over different shard counts own nothing
// while both are live.
func TestDisagreeingShardMapsOwnNothing(t *testing.T) {
	w := newWorld(t, 7, 4)
	a := w.add("a")
	for range 100 {
		w.step(100 * time.Millisecond)
	}
	if len(a.Owned()) != 4 {
		t.Fatalf("a alone owns %v", a.Owned())
	}
	w.shards = 8
	b := w.add("b")
	w.shards = 4 // check the 4 shards a maps: b's 8 would cover a's 4 and more
	for range 100 {
		w.step(100 * time.Millisecond)
	}
	if len(a.Owned()) != 0 || len(b.Owned()) != 0 {
		t.Errorf("a owns %v, b owns %v: want nothing while they disagree", a.Owned(), b.Owned())
	}
	w.stop(b)
	for range 100 {
		w.step(100 * time.Millisecond)
	}
	if len(a.Owned()) != 4 {
		t.Errorf("once b is gone a owns %v", a.Owned())
	}
}

// A replica that stops while its copy of a Lease is stale (its own last
// renewal landed after it read the Lease, or another write did) reads it
// again and releases it while it still holds it: nothing it held waits
// for its lease to expire, and a Lease it no longer holds is left alone.
func TestAStoppedReplicaReleasesLeasesItsCopyOfIsStale(t *testing.T) {
	w := newWorld(t, 7, 4)
	a := w.add("a")
	for start := w.now; len(a.Owned()) < 4 && w.now.Sub(start) < 3*dur; {
		w.step(50 * time.Millisecond)
	}
	if len(a.Owned()) != 4 {
		t.Fatalf("a owns %v, want every shard", a.Owned())
	}
	// Every Lease a holds changes behind its back, its holder kept (a
	// renewal in flight), but for one another replica took meanwhile.
	var taken string
	for name, l := range w.leases {
		if holder(l) != a.Identity() {
			continue
		}
		if taken == "" && strings.HasPrefix(name, "cairn-shard-") {
			taken = name
			l = l.DeepCopy()
			l.Spec.HolderIdentity = new("other")
		}
		w.put(l)
	}
	w.stop(a)
	for name, l := range w.leases {
		switch h := holder(l); {
		case name == taken && h != "other":
			t.Errorf("%s, taken by another replica, is now held by %q", name, h)
		case name != taken && h == a.Identity():
			t.Errorf("%s is still held by the stopped replica", name)
		}
	}
}
