package postgres

import (
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// lease is a primary's right to take writes, kept by its own clock: it
// ends TTL after the last confirmation that was answered with the label
// primary (or none yet) was sent, or after the last time every other
// member the primary was told of followed it (the failsafe, failsafe.go),
// whichever is later. A confirmation is a GET of the member's own pod with no
// resourceVersion, which the API server answers from etcd by a quorum
// read, never from its watch cache. Its rules are pure, so tests give
// them times of their own.
//
// Why the runtime's wait after fencing (LeaseTTL + Margin from the time
// its label patch returned) is a bound: a confirmation that read the
// label primary was read before the patch that fenced the member was
// committed, so it was sent before the runtime recorded the fence; the
// lease, counted from the send, ends no later than LeaseTTL after the
// fence by the member's clock, and the watchdog stops the server when it
// ends (a timer of its own, not a check after the next confirmation),
// killing it demoteGrace later if a fast shutdown has not finished. The
// Margin covers that grace and the two clocks' rates. A failsafe
// renewal (failsafe.go) is bounded the same way from the runtime's last
// detach of a member instead of its fence: the runtime counts from the
// later of the two.
//
// Confirmations are sent every interval (a quarter of the TTL by
// default: 0.4 requests a second at 10 s, where every 500 ms was 2), at
// most retryEvery after a failed one, and at once, nudgeGap after the
// last at the soonest, when nudged: the runtime NOTIFYs a member that
// answers as a primary while labelled away, so such a member stops
// within a pass and a round trip, as promptly as confirming every 500 ms
// did, while one the runtime cannot reach stops at its next confirmation
// (it does not answer, so the runtime waits for the lease anyway).
type lease struct {
	ttl, every time.Duration
	// end is when the lease runs out unless renewed; next when the next
	// confirmation is due; last when the last one was sent.
	end, next, last time.Time
	// nudged: a nudge came that no confirmation sent since has served.
	nudged bool
}

// verdict is what an answer or the clock makes of the lease.
type verdict int

const (
	leaseKept verdict = iota
	leaseLabelledAway
	leaseExpired
)

// newLease is a lease last confirmed at confirmed (a confirmation before
// the server started, or the time a standby found itself promoted),
// whose first confirmation is due at once.
func newLease(confirmed time.Time, ttl, every time.Duration) *lease {
	return &lease{ttl: ttl, every: every, end: confirmed.Add(ttl), next: confirmed}
}

// expired: the lease has run out at now.
func (l *lease) expired(now time.Time) bool { return !now.Before(l.end) }

// sending records a confirmation sent at now: it serves every nudge so
// far.
func (l *lease) sending(now time.Time) {
	l.last, l.nudged = now, false
}

// answered applies a confirmation's answer, received at now: a label
// away ends the lease at once; the label primary (or none) renews it
// from the time the confirmation was sent, and the next is due an
// interval after that; an error leaves it as it was, the next due
// retryEvery later at most.
func (l *lease) answered(a confirmation, now time.Time) verdict {
	switch {
	case a.err == nil && contract.Follows(a.label):
		return leaseLabelledAway
	case a.err == nil:
		if end := a.sent.Add(l.ttl); end.After(l.end) {
			l.end = end
		}
		l.next = a.sent.Add(l.every)
	default:
		l.next = now.Add(min(l.every, retryEvery))
	}
	if l.nudged {
		l.nudge(now)
	}
	if l.expired(now) {
		return leaseExpired
	}
	return leaseKept
}

// followed renews the lease as of at, a time at which every other member
// the primary was told of had followed it (failsafe.go); it never
// shortens it. A label away, read through the API server, still
// ends it at once.
func (l *lease) followed(at time.Time) {
	if end := at.Add(l.ttl); end.After(l.end) {
		l.end = end
	}
}

// nudge makes the next confirmation due at once, but no sooner than
// nudgeGap after the last one; a nudge that comes while a confirmation
// is in flight is served by the next.
func (l *lease) nudge(now time.Time) {
	l.nudged = true
	if at := later(now, l.last.Add(nudgeGap)); at.Before(l.next) {
		l.next = at
	}
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
