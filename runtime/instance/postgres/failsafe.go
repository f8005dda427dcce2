package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/planner/contract"
)

// The failsafe: a primary whose API server does not answer keeps its
// lease while every other member of the cluster follows it, asked
// directly, so an API server outage does not stop a healthy primary.
// What it counts and why the runtime's wait stays a bound:
//
//   - The runtime writes contract.PostgresFailsafeSetting on the primary
//     itself: its name, its timeline and every member. The primary
//     honours it only under its own name and on that timeline, so a copy
//     a clone or a rewind carried elsewhere, or one from an earlier term,
//     counts for nothing. The runtime records every value the primary
//     may hold (runtime/agent/pgfailsafe.go).
//   - Every failsafeEvery the instance manager reads its own server's
//     pg_stat_replication. A member follows at a read when its reply_time
//     changed since the read before: a reply came after that earlier
//     read was sent. It is counted as following at the earlier of that
//     send and the reply_time itself (the standby's clock), never later
//     than the reply was sent, so a reply held up in the network and
//     delivered late renews nothing past when it left.
//   - The lease is renewed as of the earliest of the other members'
//     follow times: when every one of them had followed.
//   - Before promoting in place of a primary it cannot reach, the runtime
//     detaches the members it reaches (primary_conninfo empty, its WAL
//     receiver gone), one at least of every member list the primary may
//     hold, and promotes only once the lease has run out since the last
//     detach: no reply a detached member sent later than that exists, so
//     none renews the lease past it.
//
// Members' clocks are assumed to agree within the runtime's margin
// (a reply_time is read from the standby's clock).

// failsafeEvery is how often a primary reads its own replication state.
const failsafeEvery = 500 * time.Millisecond

// failsafeRead is one read of the primary's own server: the setting,
// the timeline the server writes on, and each standby's last reply_time
// by application name (the member's name).
type failsafeRead struct {
	sent     time.Time
	setting  string
	timeline int64
	replies  map[string]time.Time
}

// failsafe is the primary's record of when each member last followed
// it. Its rules are pure; observe takes reads in order.
type failsafe struct {
	self     string
	prevSent time.Time
	prev     map[string]time.Time
	follow   map[string]time.Time
}

func newFailsafe(self string) *failsafe {
	return &failsafe{self: self, prev: map[string]time.Time{}, follow: map[string]time.Time{}}
}

// observe applies a read and says as of when the failsafe keeps the
// lease: zero when it does not (no setting honoured, or a member has not
// followed yet).
func (fs *failsafe) observe(r failsafeRead) time.Time {
	f, ok, err := contract.ParseFailsafe(r.setting)
	if err != nil || !ok || f.Primary != fs.self || f.Timeline != r.timeline {
		*fs = *newFailsafe(fs.self)
		return time.Time{}
	}
	others := f.Others()
	for _, m := range others {
		rep, now := r.replies[m]
		was, before := fs.prev[m]
		if now && before && rep.After(was) && !fs.prevSent.IsZero() {
			at := earlier(fs.prevSent, rep)
			if at.After(fs.follow[m]) {
				fs.follow[m] = at
			}
		}
		if now {
			fs.prev[m] = rep
		} else {
			delete(fs.prev, m)
		}
	}
	fs.prevSent = r.sent
	renewed := r.sent
	for _, m := range others {
		at, ok := fs.follow[m]
		if !ok {
			return time.Time{}
		}
		renewed = earlier(renewed, at)
	}
	return renewed
}

// failsafeSQL reads the setting, the timeline the server writes on, and
// each standby's last reply.
var failsafeSQL = `SELECT ` + contract.FailsafeReadSQL() + `,
  ` + contract.WriteTimelineSQL + `,
  COALESCE((SELECT array_agg(application_name) FROM pg_stat_replication WHERE reply_time IS NOT NULL), '{}'),
  COALESCE((SELECT array_agg((extract(epoch FROM reply_time) * 1000000)::int8) FROM pg_stat_replication WHERE reply_time IS NOT NULL), '{}')`

// watchFailsafe reads the server every failsafeEvery until ctx ends and
// sends on out each time as of which the failsafe keeps the lease. A
// read that fails renews nothing.
func (p *Manager) watchFailsafe(ctx context.Context, out chan<- time.Time) {
	read := p.readFailsafe
	if read == nil {
		s := &ownSession{p: p}
		defer s.close()
		read = s.read
	}
	fs := newFailsafe(p.Name)
	t := time.NewTicker(failsafeEvery)
	defer t.Stop()
	for {
		if r, err := read(ctx); err == nil {
			if at := fs.observe(r); !at.IsZero() {
				select {
				case out <- at:
				case <-ctx.Done():
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ownSession is a session on the member's own server for the failsafe's
// reads, opened again after one fails (the server restarted).
type ownSession struct {
	p    *Manager
	conn *pgx.Conn
}

func (s *ownSession) read(ctx context.Context) (failsafeRead, error) {
	cctx, cancel := context.WithTimeout(ctx, failsafeEvery*2)
	defer cancel()
	r := failsafeRead{sent: time.Now(), replies: map[string]time.Time{}}
	if s.conn == nil {
		conn, err := s.p.connect(cctx, s.p.Host+":"+strconv.Itoa(s.p.Port))
		if err != nil {
			return r, err
		}
		s.conn = conn
		r.sent = time.Now()
	}
	var names []string
	var micros []int64
	if err := s.conn.QueryRow(cctx, failsafeSQL).Scan(&r.setting, &r.timeline, &names, &micros); err != nil {
		s.close()
		return r, err
	}
	for i, n := range names {
		if i < len(micros) {
			if at := time.UnixMicro(micros[i]); at.After(r.replies[n]) {
				r.replies[n] = at
			}
		}
	}
	return r, nil
}

func (s *ownSession) close() {
	if s.conn != nil {
		s.conn.Close(context.Background())
		s.conn = nil
	}
}
