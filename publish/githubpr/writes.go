package githubpr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// ErrWriteBudget: the hourly budget of writes is spent; the write is left
// to a later pass.
var ErrWriteBudget = errors.New("the hourly budget of GitHub writes is spent")

// SpacingEnv names the environment variable that sets the spacing of
// writes when Options.WriteSpacing is 0: a Go duration, 0 for none (a
// GitHub Enterprise Server without rate limits; the GitHub test server
// sets it for the tests it serves).
const SpacingEnv = "CAIRN_GITHUB_WRITE_SPACING"

// writeSpacing is the spacing Options ask for: o, else SpacingEnv, else
// 0 (newWriteGate's one second); negative for none.
func writeSpacing(o time.Duration) (time.Duration, error) {
	v := os.Getenv(SpacingEnv)
	if o != 0 || v == "" {
		return o, nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("$%s: %w", SpacingEnv, err)
	case d <= 0:
		return -1, nil
	}
	return d, nil
}

// defaultWritesPerHour is GitHub's secondary limit on content-creating
// requests in an hour.
const defaultWritesPerHour = 500

// writeGate spaces writes (GitHub asks for at least a second between
// content-creating requests) and keeps them within a budget per hour.
type writeGate struct {
	mu      sync.Mutex
	spacing time.Duration
	perHour int         // 0: no budget
	sent    []time.Time // the writes of the last hour, oldest first
	// deferring is set once a write was deferred, so that the log says it
	// once, and again only after writes went through.
	deferring bool
	now       func() time.Time
	sleep     func(context.Context, time.Duration) error
	log       *slog.Logger
}

func newWriteGate(spacing time.Duration, perHour int, log *slog.Logger) *writeGate {
	switch {
	case spacing == 0:
		spacing = time.Second
	case spacing < 0:
		spacing = 0
	}
	switch {
	case perHour == 0:
		perHour = defaultWritesPerHour
	case perHour < 0:
		perHour = 0
	}
	return &writeGate{spacing: spacing, perHour: perHour, now: time.Now, sleep: sleepCtx, log: log}
}

// wait lets one write go: after the spacing since the last one, and only
// within the budget. Writes go one at a time.
func (g *writeGate) wait(ctx context.Context, call string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for len(g.sent) > 0 && !g.sent[0].After(now.Add(-time.Hour)) {
		g.sent = g.sent[1:]
	}
	if g.perHour > 0 && len(g.sent) >= g.perHour {
		next := g.sent[0].Add(time.Hour)
		if !g.deferring {
			g.log.Warn("deferring GitHub writes to a later pass: the hourly write budget is spent",
				"budget", g.perHour, "until", next.UTC().Format(time.RFC3339), "call", call)
			g.deferring = true
		}
		return fmt.Errorf("%w (%d writes in the last hour; more from %s)", ErrWriteBudget, g.perHour, next.UTC().Format(time.RFC3339))
	}
	if n := len(g.sent); n > 0 && g.spacing > 0 {
		if d := g.sent[n-1].Add(g.spacing).Sub(now); d > 0 {
			if err := g.sleep(ctx, d); err != nil {
				return err
			}
			now = g.now()
		}
	}
	g.deferring = false
	g.sent = append(g.sent, now)
	return nil
}
