package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// errDemoted: the server was stopped because this member may no longer
// be a primary; it starts again as a replica.
var errDemoted = errors.New("stopped: no longer the primary")

// Defaults and bounds of the primary's watchdog.
const (
	defaultLeaseTTL = contract.PostgresLeaseTTL
	// leaseParts: a primary confirms its label every LeaseTTL/leaseParts
	// unless ConfirmEvery is set, so a few confirmations in a row may
	// fail before its lease runs out.
	leaseParts = 4
	// retryEvery: after a failed confirmation the next is sent at most
	// this much later, so a short API server outage is ridden out.
	retryEvery = time.Second
	// nudgeGap: a nudged confirmation is sent no sooner than this after
	// the last one, however often the member is nudged.
	nudgeGap = 250 * time.Millisecond
	// standbyEvery is how often a standby looks (a local file, no API
	// request) whether it was promoted and must start confirming.
	standbyEvery = 500 * time.Millisecond
	// demoteGrace is how long a fenced primary's fast shutdown may take
	// before it is killed.
	demoteGrace = time.Second
)

// leaseTimings are the primary's LeaseTTL and confirmation interval,
// with their defaults: contract.PostgresLeaseTTL (10 s), and a quarter
// of the TTL.
func (p *Manager) leaseTimings() (ttl, every time.Duration) {
	ttl = p.LeaseTTL
	if ttl <= 0 {
		ttl = defaultLeaseTTL
	}
	every = p.ConfirmEvery
	if every <= 0 {
		every = ttl / leaseParts
	}
	return ttl, every
}

// watchdog is the fence a primary keeps on itself: while the server runs
// as a primary (no standby.signal) it holds a lease (lease.go) that a
// confirmation of its role label through the API server renews. Labelled
// fenced or replica, it stops the server at once; unconfirmed until its
// lease ends, it stops it too. It returns errDemoted then, nil when ctx
// ends, and the server's error when it exits on its own.
//
// A standby confirms nothing: it looks every standbyEvery whether it was
// promoted, and from then on keeps the lease, its first confirmation at
// once.
func (p *Manager) watchdog(ctx context.Context, s *Server) error {
	if p.Confirm == nil {
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return s.err
		}
	}
	t := time.NewTicker(standbyEvery)
	defer t.Stop()
	for p.isStandby() {
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return s.err
		case <-t.C:
		}
	}
	t.Stop()
	switch err := p.keepLease(ctx, s.done); {
	case errors.Is(err, errDemoted):
		s.stopWithin(demoteGrace)
		return errDemoted
	case errors.Is(err, errExited):
		return s.err
	}
	return nil
}

// errExited: the server exited on its own while the lease was kept.
var errExited = errors.New("the server exited")

// confirmation is one confirmation's answer, with when it was sent.
type confirmation struct {
	sent  time.Time
	label string
	err   error
}

// keepLease keeps the primary's lease (lease.go) from its last
// confirmation, or from the last time every other member followed it
// (failsafe.go): it confirms at once, then every interval (sooner after a
// failure, or when nudged), with at most one confirmation in flight, and
// returns errDemoted as soon as an answer is a label away or the lease
// ends, whichever comes first. The lease's end is a timer of its own,
// never checked only when a confirmation returns: a member frozen past
// it stops on waking, before anything else. It returns nil when ctx ends
// and errExited when exited closes.
func (p *Manager) keepLease(ctx context.Context, exited <-chan struct{}) error {
	ttl, every := p.leaseTimings()
	l := newLease(p.takeConfirmed(time.Now()), ttl, every)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nudges := make(chan struct{}, 1)
	listen := p.nudges
	if listen == nil {
		listen = p.listenNudges
	}
	go listen(lctx, nudges)
	followed := make(chan time.Time)
	go p.watchFailsafe(lctx, followed)
	answers := make(chan confirmation, 1)
	inFlight := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		now := time.Now()
		if l.expired(now) {
			return p.demoted(leaseExpired, l, now, nil)
		}
		if !inFlight && !now.Before(l.next) {
			inFlight = true
			l.sending(now)
			go p.confirm(lctx, now, earlier(now.Add(every), l.end), answers)
		}
		wake := l.end
		if !inFlight && l.next.Before(wake) {
			wake = l.next
		}
		timer.Reset(time.Until(wake))
		select {
		case <-ctx.Done():
			return nil
		case <-exited:
			return errExited
		case a := <-answers:
			inFlight = false
			if v := l.answered(a, time.Now()); v != leaseKept {
				return p.demoted(v, l, time.Now(), &a)
			}
		case <-nudges:
			l.nudge(time.Now())
		case at := <-followed:
			l.followed(at)
		case <-timer.C:
		}
	}
}

// takeConfirmed is when the lease starts: the confirmation Prepare made
// before the server started, if any (a long crash recovery in between
// counts against the lease), else now. It is used once.
func (p *Manager) takeConfirmed(now time.Time) time.Time {
	at := p.confirmedAt
	p.confirmedAt = time.Time{}
	if at.IsZero() || at.After(now) {
		return now
	}
	return at
}

// confirm sends one confirmation, answered by deadline at the latest.
func (p *Manager) confirm(ctx context.Context, sent, deadline time.Time, out chan<- confirmation) {
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	label, err := p.Confirm(cctx)
	out <- confirmation{sent: sent, label: label, err: err}
}

// demoted logs why the lease was given up and returns errDemoted; last
// is the answer that ended it, if one did.
func (p *Manager) demoted(v verdict, l *lease, now time.Time, last *confirmation) error {
	if v == leaseLabelledAway {
		p.Log.Warn("primary is labelled away: stopping it to come back as a replica", "member", p.Name, "label", last.label)
		return errDemoted
	}
	why := "no answer in time"
	if last != nil && last.err != nil {
		why = last.err.Error()
	}
	p.Log.Warn("primary cannot confirm its role through the API server, and not every member follows it: stopping it", "member", p.Name,
		"unconfirmed_for", now.Sub(l.end.Add(-l.ttl)).Round(time.Millisecond).String(), "err", why)
	return errDemoted
}
