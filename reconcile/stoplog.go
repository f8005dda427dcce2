package reconcile

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// stopLog is the loop's log handler: once the pass's context has ended
// (SIGINT, SIGTERM), it drops the warnings and errors the stop causes
// (a push or an API call cut short is no failure), so that a stop logs
// nothing alarming.
type stopLog struct {
	slog.Handler
	// pass is the context of the pass under way, or of the last one.
	pass *atomic.Pointer[context.Context]
}

func (h stopLog) Handle(ctx context.Context, r slog.Record) error {
	if p := h.pass.Load(); p != nil && (*p).Err() != nil && r.Level >= slog.LevelWarn {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h stopLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return stopLog{h.Handler.WithAttrs(attrs), h.pass}
}

func (h stopLog) WithGroup(name string) slog.Handler {
	return stopLog{h.Handler.WithGroup(name), h.pass}
}
