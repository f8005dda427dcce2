package instance

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// errDemoted: the server was stopped because this member may no longer
// be a primary; it starts again as a replica.
var errDemoted = errors.New("stopped: no longer the primary")

// Defaults of the primary's watchdog.
const (
	defaultConfirmEvery = 500 * time.Millisecond
	defaultLeaseTTL     = 30 * time.Second
	// demoteGrace is how long a fenced primary's fast shutdown may take
	// before it is killed.
	demoteGrace = time.Second
)

// watchdog is the fence a primary keeps on itself: while the server runs
// as a primary (no standby.signal), it confirms its role label through
// the API server every ConfirmEvery. Labelled fenced or replica, it stops
// the server at once; unconfirmed for LeaseTTL, it stops it too. It
// returns errDemoted then, nil when ctx ends, and the server's error when
// it exits on its own.
func (p *Postgres) watchdog(ctx context.Context, s *Server) error {
	every, ttl := p.ConfirmEvery, p.LeaseTTL
	if every <= 0 {
		every = defaultConfirmEvery
	}
	if ttl <= 0 {
		ttl = defaultLeaseTTL
	}
	t := time.NewTicker(every)
	defer t.Stop()
	confirmed := time.Now()
	// The first confirmation is at once: a primary the runtime fenced
	// while it was starting (crash recovery) stops before its first tick.
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return nil
			case <-s.done:
				return s.err
			case <-t.C:
			}
		}
		if p.Confirm == nil || p.isStandby() {
			confirmed = time.Now()
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, every)
		label, err := p.Confirm(cctx)
		cancel()
		switch {
		case err == nil && contract.Follows(label):
			p.Log.Warn("primary is labelled away: stopping it to come back as a replica", "member", p.Name, "label", label)
			s.stopWithin(demoteGrace)
			return errDemoted
		case err == nil:
			confirmed = time.Now()
		case time.Since(confirmed) >= ttl:
			p.Log.Warn("primary cannot confirm its role through the API server: stopping it", "member", p.Name, "unconfirmed_for", time.Since(confirmed).String(), "err", err.Error())
			s.stopWithin(demoteGrace)
			return errDemoted
		}
	}
}
