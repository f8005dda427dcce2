package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/planner/contract"
)

// nudgeTimeout bounds a nudge: a member that stalls does not hold the
// pass up.
const nudgeTimeout = 2 * time.Second

// nudgeLabelledAway asks every member that answered this pass as a
// primary while labelled fenced or replica to confirm its label at once
// (NOTIFY on contract.PostgresConfirmChannel, which its instance manager
// LISTENs on). A primary's instance manager confirms through the API
// server only every quarter of its lease otherwise (runtime/instance/postgres,
// lease.go), and such a member is what a failover or switchover waits
// for (stillWrites): nudged, it stops within a pass. A member that does
// not get the nudge is nudged again next pass; one the runtime cannot
// reach is waited out for its lease in any case.
func (p *pgPass) nudgeLabelledAway(ctx context.Context) {
	for _, m := range p.view.Members {
		if !m.primary() || !contract.Follows(m.Label) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, nudgeTimeout)
		err := p.sql(cctx, m.Name, "NOTIFY "+pgx.Identifier{contract.PostgresConfirmChannel}.Sanitize())
		cancel()
		if err != nil {
			p.r.logger().Warn("member labelled away not nudged", "member", m.Name, "label", m.Label, "err", err.Error())
			continue
		}
		p.r.logger().Debug("member labelled away nudged to confirm its label", "member", m.Name, "label", m.Label)
	}
}
