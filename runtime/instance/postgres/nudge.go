package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/planner/contract"
)

// nudgeRetry is how long a primary waits before it opens its LISTEN
// session again after it broke (the server restarting, a switchover
// terminating sessions).
const nudgeRetry = time.Second

// listenNudges keeps a session on the member's own server that LISTENs
// on contract.PostgresConfirmChannel, and sends on out (without waiting)
// for each notification, until ctx ends. The runtime NOTIFYs a member
// that answers as a primary while labelled fenced or replica; the
// watchdog then confirms at once (lease.go). A notification only hastens
// a confirmation, so anyone who may NOTIFY can at most cost a GET every
// nudgeGap; a lost one costs the runtime's next pass, which nudges again.
func (p *Manager) listenNudges(ctx context.Context, out chan<- struct{}) {
	self := p.Host + ":" + strconv.Itoa(p.Port)
	for {
		err := p.listenOnce(ctx, self, out)
		if ctx.Err() != nil {
			return
		}
		p.Log.Debug("the nudge session broke; opening it again", "member", p.Name, "err", err.Error(), "retry_in", nudgeRetry.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(nudgeRetry):
		}
	}
}

func (p *Manager) listenOnce(ctx context.Context, self string, out chan<- struct{}) error {
	conn, err := p.connect(ctx, self)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{contract.PostgresConfirmChannel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait for a notification: %w", err)
		}
		select {
		case out <- struct{}{}:
		default: // one is pending already
		}
	}
}
