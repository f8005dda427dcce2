package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Run takes part in the fleet until ctx ends: a round every tenth of the
// lease duration lists the fleet's Leases, decides (Decide) and writes.
// When ctx ends, the member stops publishing and releases its Leases, so
// the others take its shards at once — unless ctx's cause is ErrKilled.
// End ctx only once the loop that asks Owns has stopped: a shard released
// is another replica's at once. Run returns nil.
func (m *Member) Run(ctx context.Context) error {
	t := time.NewTicker(m.period)
	defer t.Stop()
	var failing string
	for {
		err := m.round(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil && err.Error() != failing:
			// Said once per kind of failure, not every round.
			m.log.Warn("shard round failed", "err", err.Error())
			failing = err.Error()
		case err == nil && failing != "":
			m.log.Info("shard rounds work again")
			failing = ""
		}
		select {
		case <-ctx.Done():
			m.stop(context.Cause(ctx))
			return nil
		case <-t.C:
		}
	}
}

// round is one round: list, decide, write.
func (m *Member) round(ctx context.Context) error {
	leases, err := m.store.list(ctx)
	if err != nil {
		return err
	}
	now := m.now()
	v, objs := m.view(leases, now)
	d := Decide(v)
	return m.apply(ctx, d, objs, now)
}

// view records what the list shows (when each Lease was first seen at its
// version, which of this replica's Leases it lost) and returns the View
// of it, with the listed Leases by name.
func (m *Member) view(leases []coordv1.Lease, now time.Time) (View, map[string]*coordv1.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := View{Identity: m.identity, Map: m.shardMap, Shards: m.shards, Margin: m.margin, Now: now,
		Slots: map[int]Record{}, Leases: map[int]Record{}, Draining: map[int]time.Time{}}
	objs := map[string]*coordv1.Lease{}
	seen := map[string]seenAt{}
	trigger := ""
	for i := range leases {
		l := &leases[i]
		s, ok := m.seen[l.Name]
		if !ok || s.version != l.ResourceVersion {
			s = seenAt{version: l.ResourceVersion, at: now}
		}
		seen[l.Name] = s
		objs[l.Name] = l
		if l.Name == triggerName {
			trigger = l.ResourceVersion
			continue
		}
		family, n, ok := leaseIndex(l.Name)
		if !ok {
			continue
		}
		r := Record{Holder: holder(l), Duration: duration(l, m.duration), Map: l.Annotations[AnnotationMap], Seen: s.at}
		switch {
		case family == slotPrefix && n < MaxReplicas:
			v.Slots[n] = r
		case family == shardPrefix && n < m.shards:
			v.Leases[n] = r
			m.track(n, l)
		}
	}
	// A Lease gone from the list is forgotten, and seen anew if it comes
	// back.
	m.seen = seen
	for s := range m.held {
		if l := objs[shardLease(s)]; l == nil || holder(l) != m.identity {
			m.log.Warn("lost a shard to another replica", "shard", s)
			delete(m.held, s)
		}
	}
	if m.slot != nil {
		if l := objs[slotLease(m.slot.index)]; l == nil || holder(l) != m.identity {
			m.log.Warn("lost the replica slot", "slot", m.slot.index)
			m.slot = nil
		}
	}
	for s, h := range m.held {
		if !h.draining.IsZero() {
			v.Draining[s] = h.draining
		}
	}
	if m.trigger != nil && *m.trigger != trigger {
		m.fire()
	}
	m.trigger = &trigger
	return v, objs
}

// track keeps the latest version of a shard Lease this replica holds; one
// it holds but did not know of (a write whose answer was lost) is held
// from now, but not published before it is renewed.
func (m *Member) track(s int, l *coordv1.Lease) {
	if holder(l) != m.identity {
		return
	}
	if h := m.held[s]; h != nil {
		h.lease = l
		return
	}
	m.held[s] = &holding{index: s, lease: l}
}

// apply carries out d: the slot first, then releases, renewals and
// acquisitions. Shards leave Own before any write, so this replica stops
// publishing them before anything else happens.
func (m *Member) apply(ctx context.Context, d Decision, objs map[string]*coordv1.Lease, now time.Time) error {
	own := map[int]bool{}
	for _, s := range d.Own {
		own[s] = true
	}
	m.mu.Lock()
	m.agree, m.live = d.Agree, len(d.Live)
	for s, h := range m.held {
		switch {
		case own[s]:
			h.draining = time.Time{}
		case h.draining.IsZero():
			h.draining = now
		}
	}
	m.mu.Unlock()
	var errs []error
	member, err := m.keepSlot(ctx, d, objs)
	errs = append(errs, err)
	for _, k := range d.ExtraSlots {
		_, err := m.write(ctx, objs[slotLease(k)], func(l *coordv1.Lease, at time.Time) *coordv1.Lease { return released(l, at) })
		if !lostRace(err) {
			errs = append(errs, err)
		}
	}
	for _, s := range d.Release {
		errs = append(errs, m.releaseShard(ctx, s))
	}
	for _, s := range append(slices.Clone(d.Own), d.Drain...) {
		errs = append(errs, m.renewShard(ctx, s))
	}
	took := false
	for _, s := range d.Acquire {
		ok, err := m.acquireShard(ctx, s, objs[shardLease(s)])
		took = took || ok
		errs = append(errs, err)
	}
	if took {
		m.fire()
	}
	if member {
		select {
		case <-m.ready:
		default:
			close(m.ready)
		}
	}
	return errors.Join(errs...)
}

// keepSlot renews or claims the replica slot d names. member: the slot
// was this replica's before the round and still is.
func (m *Member) keepSlot(ctx context.Context, d Decision, objs map[string]*coordv1.Lease) (member bool, err error) {
	if d.Slot < 0 {
		m.mu.Lock()
		m.slot = nil
		m.mu.Unlock()
		return false, fmt.Errorf("no free replica slot among %d in %s", MaxReplicas, m.namespace)
	}
	l := objs[slotLease(d.Slot)]
	if l == nil {
		l = newLease(slotLease(d.Slot), m.namespace, "replica")
	}
	var sent time.Time
	out, err := m.write(ctx, l, func(l *coordv1.Lease, at time.Time) *coordv1.Lease {
		sent = at
		return claimed(l, m.identity, m.duration, at, m.shardMap)
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil:
		if d.Claim {
			m.log.Info("holding a replica slot", "slot", d.Slot)
		}
		m.slot = &holding{index: d.Slot, lease: out, renewed: sent}
		return !d.Claim, nil
	case lostRace(err) && d.Claim:
		return false, nil // another replica claimed it first: the next round claims another
	case lostRace(err):
		m.log.Warn("lost the replica slot", "slot", d.Slot)
		m.slot = nil
		return false, nil
	}
	return false, err
}

func (m *Member) renewShard(ctx context.Context, s int) error {
	m.mu.Lock()
	h := m.held[s]
	m.mu.Unlock()
	if h == nil {
		return nil
	}
	var sent time.Time
	out, err := m.write(ctx, h.lease, func(l *coordv1.Lease, at time.Time) *coordv1.Lease {
		sent = at
		return claimed(l, m.identity, m.duration, at, "")
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil:
		h.lease, h.renewed = out, sent
	case lostRace(err):
		m.log.Warn("lost a shard to another replica", "shard", s)
		delete(m.held, s)
		return nil
	}
	return err
}

func (m *Member) releaseShard(ctx context.Context, s int) error {
	m.mu.Lock()
	h := m.held[s]
	m.mu.Unlock()
	if h == nil {
		return nil
	}
	_, err := m.write(ctx, h.lease, func(l *coordv1.Lease, at time.Time) *coordv1.Lease { return released(l, at) })
	if err == nil || lostRace(err) {
		m.mu.Lock()
		delete(m.held, s)
		m.mu.Unlock()
	}
	switch {
	case err == nil:
		m.log.Info("released a shard", "shard", s)
	case lostRace(err):
		return nil // it was no longer this replica's
	}
	return err
}

// acquireShard takes shard s, free as listed (l; nil when not created).
// Another replica taking it first is no failure.
func (m *Member) acquireShard(ctx context.Context, s int, l *coordv1.Lease) (bool, error) {
	if l == nil {
		l = newLease(shardLease(s), m.namespace, "shard")
	}
	var sent time.Time
	out, err := m.write(ctx, l, func(l *coordv1.Lease, at time.Time) *coordv1.Lease {
		sent = at
		return claimed(l, m.identity, m.duration, at, "")
	})
	if lostRace(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	m.held[s] = &holding{index: s, lease: out, renewed: sent}
	m.mu.Unlock()
	m.log.Info("took a shard", "shard", s)
	return true, nil
}

// write writes change(l, now): an update of l, or its creation when l has
// no resourceVersion. The time change gets is taken before the call goes
// out, so it is no later than the moment the API server applies it.
func (m *Member) write(ctx context.Context, l *coordv1.Lease, change func(*coordv1.Lease, time.Time) *coordv1.Lease) (*coordv1.Lease, error) {
	want := change(l, m.now())
	if l.ResourceVersion == "" {
		return m.store.create(ctx, want)
	}
	return m.store.update(ctx, want)
}

// lostRace: the Lease changed since it was listed (another replica wrote
// it, or it is gone), or another replica created it first.
func lostRace(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

// stop ends this replica's part: it publishes nothing from now, and,
// unless killed, releases its shards and slot.
func (m *Member) stop(cause error) {
	if errors.Is(cause, ErrKilled) {
		m.log.Info("stopping without releasing the leases", "cause", cause.Error())
		return
	}
	m.mu.Lock()
	m.agree = false
	held := slices.Collect(maps.Values(m.held))
	slot := m.slot
	m.held, m.slot = map[int]*holding{}, nil
	m.mu.Unlock()
	ctx := context.Background() // every call has its own timeout
	for _, h := range held {
		if err := m.release(ctx, h.lease); err != nil {
			m.log.Warn("could not release a shard: it moves once its lease expires", "shard", h.index, "err", err.Error())
		}
	}
	if slot != nil {
		if err := m.release(ctx, slot.lease); err != nil {
			m.log.Warn("could not release the replica slot", "slot", slot.index, "err", err.Error())
		}
	}
	m.log.Info("released the leases", "shards", len(held))
}

// release gives up lease l while this replica holds it. A conflict means
// the Lease changed since l was read (this replica's own renewal in
// flight as it stopped, or another replica's write): it is read again and
// released only if this replica still holds it, so a stopped replica
// never leaves a Lease held until it expires because its copy was stale.
func (m *Member) release(ctx context.Context, l *coordv1.Lease) error {
	for range 3 {
		_, err := m.write(ctx, l, released)
		if !apierrors.IsConflict(err) {
			if err != nil && !lostRace(err) {
				return err
			}
			return nil
		}
		cur, err := m.store.get(ctx, l.Name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if holder(cur) != m.identity {
			return nil
		}
		l = cur
	}
	return fmt.Errorf("lease %s changed at each of 3 attempts to release it", l.Name)
}

// Notify has every replica pass again soon (their Triggers), by changing
// cairn-trigger: a GitHub webhook reaches one replica of the fleet, and
// the change it tells of may be another's. A concurrent Notify that
// changed it first is as good.
func (m *Member) Notify(ctx context.Context) error {
	l, err := m.store.get(ctx, triggerName)
	if apierrors.IsNotFound(err) {
		l, err = newLease(triggerName, m.namespace, "trigger"), nil
	}
	if err != nil {
		return err
	}
	_, err = m.write(ctx, l, func(l *coordv1.Lease, at time.Time) *coordv1.Lease {
		return claimed(l, m.identity, m.duration, at, "")
	})
	if lostRace(err) {
		return nil
	}
	return err
}
