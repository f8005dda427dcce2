package shard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/plan"
)

// Defaults of Config.
const (
	DefaultShards        = 32
	DefaultLeaseDuration = 30 * time.Second
	// MinLeaseDuration keeps a round's calls well inside a lease.
	MinLeaseDuration = 2 * time.Second
)

// Config configures a Member. Client, Namespace and ID are required.
type Config struct {
	// Client reaches the API server that keeps the Leases.
	Client kubernetes.Interface
	// Namespace holds the fleet's Leases: one namespace per GitOps repo.
	Namespace string
	// ID names the replica (its pod name). Its Leases are held as
	// ID_<random>, so a restart under the same name is another holder
	// and waits, as any other would, for the old one's Leases to expire.
	ID string
	// Shards is how many shards the clusters are spread over, 1 to
	// MaxShards; 0 is DefaultShards. Every replica must use the same.
	Shards int
	// LeaseDuration is how long a Lease lasts unrenewed, in whole
	// seconds, at least MinLeaseDuration; 0 is DefaultLeaseDuration. A
	// replica renews every tenth of it, stops publishing a shard half of
	// it after its last renewal, and another takes the shard over a whole
	// one after it last saw it change.
	LeaseDuration time.Duration
	Log           *slog.Logger
}

// ErrKilled, as the cause of Run's context (context.WithCancelCause),
// ends Run without releasing its Leases: the stop of a replica that is
// killed, left to the others to wait out.
var ErrKilled = errors.New("the replica was killed")

// Member is one replica of the fleet: it holds its replica slot and its
// share of the shards (Run), and says which clusters it publishes (Owns).
type Member struct {
	namespace, identity, shardMap string
	shards                        int
	// duration, margin and period: see Config.LeaseDuration.
	duration, margin, period time.Duration
	store                    store
	now                      func() time.Time
	log                      *slog.Logger

	triggers chan struct{}
	ready    chan struct{}

	mu sync.Mutex
	// seen is, by Lease name, the resourceVersion last listed and when
	// this replica first listed it (Record.Seen).
	seen map[string]seenAt
	// slot is the replica slot held, nil when none.
	slot *holding
	// held are the shards this replica holds, by number.
	held map[int]*holding
	// agree: at the last round, every live replica published this one's
	// shard map.
	agree bool
	// live is how many replicas were live at the last round.
	live int
	// trigger is the resourceVersion of cairn-trigger last listed, ""
	// when there was none; nil before the first list.
	trigger *string
}

type seenAt struct {
	version string
	at      time.Time
}

// holding is a Lease this replica holds.
type holding struct {
	index int
	// lease is the Lease as last written or listed: the next write's
	// resourceVersion.
	lease *coordv1.Lease
	// renewed is when this replica sent its last write that succeeded,
	// by its own clock: the API server applied it after that.
	renewed time.Time
	// draining is when it stopped publishing the shard; zero while it
	// publishes it.
	draining time.Time
}

// New returns the member of cfg; Run makes it take part.
func New(cfg Config) (*Member, error) {
	if cfg.Client == nil {
		return nil, errors.New("shard member: no Kubernetes client")
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	st := kubeStore{leases: cfg.Client.CoordinationV1().Leases(cfg.Namespace), namespace: cfg.Namespace,
		timeout: max(cfg.LeaseDuration/10, time.Second)}
	return newMember(cfg, st)
}

// newMember is the member of cfg over st.
func newMember(cfg Config, st store) (*Member, error) {
	switch {
	case cfg.Namespace == "":
		return nil, errors.New("shard member: no namespace for the leases")
	case cfg.ID == "":
		return nil, errors.New("shard member: no replica ID")
	}
	if cfg.Shards == 0 {
		cfg.Shards = DefaultShards
	}
	if cfg.Shards < 1 || cfg.Shards > MaxShards {
		return nil, fmt.Errorf("shard member: %d shards: want 1 to %d", cfg.Shards, MaxShards)
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.LeaseDuration < MinLeaseDuration || cfg.LeaseDuration%time.Second != 0 {
		return nil, fmt.Errorf("shard member: lease duration %s: want whole seconds, at least %s", cfg.LeaseDuration, MinLeaseDuration)
	}
	incarnation := make([]byte, 4)
	_, _ = rand.Read(incarnation)
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := cfg.LeaseDuration
	return &Member{
		namespace: cfg.Namespace, identity: cfg.ID + "_" + hex.EncodeToString(incarnation), shardMap: ShardMap(cfg.Shards),
		shards: cfg.Shards, duration: d, margin: d / 2, period: d / 10,
		store: st, now: time.Now, log: log.With("replica", cfg.ID),
		triggers: make(chan struct{}, 1), ready: make(chan struct{}),
		seen: map[string]seenAt{}, held: map[int]*holding{},
	}, nil
}

// Identity is the holderIdentity this replica writes.
func (m *Member) Identity() string { return m.identity }

// Namespace is where the fleet's Leases are.
func (m *Member) Namespace() string { return m.namespace }

// Owns says whether this replica publishes ref's cluster now
// (reconcile.Config.Owns): while it holds its slot and the cluster's
// shard, renewed less than half a lease duration ago, does not drain the
// shard, and agrees with every live replica on the shard map.
func (m *Member) Owns(ref plan.ClusterRef) bool { return m.ownsShard(ShardOf(ref, m.shards)) }

func (m *Member) ownsShard(s int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.held[s]
	return m.agree && m.slot != nil && m.fresh(m.slot) && h != nil && h.draining.IsZero() && m.fresh(h)
}

// fresh: this replica renewed h recently enough to act on it. Another
// replica takes the Lease over only a whole duration after it saw it
// change, which it saw after this replica sent the write.
func (m *Member) fresh(h *holding) bool {
	return !h.renewed.IsZero() && m.now().Sub(h.renewed) < m.duration-m.margin
}

// Owned are the shards this replica publishes now, ascending.
func (m *Member) Owned() []int {
	m.mu.Lock()
	idx := make([]int, 0, len(m.held))
	for s := range m.held {
		idx = append(idx, s)
	}
	m.mu.Unlock()
	var out []int
	for _, s := range idx {
		if m.ownsShard(s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Replicas is how many replicas were live at the last round, at least
// one: the share of a budget the fleet splits (the GitHub rate budget).
func (m *Member) Replicas() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.live, 1)
}

// Triggers gets a value when this replica should pass again: it took
// shards, or a replica called Notify. It is a reconcile.Loop's trigger.
func (m *Member) Triggers() <-chan struct{} { return m.triggers }

// Ready is closed after the first round in which this replica held its
// slot and took what it could of its share.
func (m *Member) Ready() <-chan struct{} { return m.ready }

func (m *Member) fire() {
	select {
	case m.triggers <- struct{}{}:
	default: // a pass is already due
	}
}
