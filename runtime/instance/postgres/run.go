package postgres

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/runtime/instance"
)

// Run prepares the member, waiting while it cannot start, starts
// PostgreSQL as a child and watches it: a primary labelled away, or
// unconfirmed for its lease, is stopped and prepared again (rewound, to
// follow); a replica that cannot catch up is stopped and re-cloned
// (catchup.go, reclone.go); a server that exits on its own is restarted
// in place once (crash.go). On SIGTERM or SIGINT it shuts the server
// down fast, and a primary's clean stop is recorded (cleanstop.go). It returns when ctx ends, or when the server exits on its
// own in a crash loop or cannot start.
func Run(ctx context.Context, p *Manager, out io.Writer) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.WALSocket != "" {
		if err := p.ServeWAL(wctx); err != nil {
			return err
		}
	}
	go func() {
		select {
		case sig := <-sigs:
			p.Log.Info("shutting down", "member", p.Name, "signal", sig.String())
			cancel()
		case <-wctx.Done():
		}
	}()
	for {
		err := runPostgresOnce(wctx, p, out)
		var crashed *errCrashed
		switch {
		case wctx.Err() != nil:
			return err
		case errors.Is(err, errDemoted), errors.Is(err, errReclone):
			// A start of its own: what follows is no recovery in place.
			p.recovered = time.Time{}
		case errors.As(err, &crashed) && p.restartInPlace(wctx, crashed):
		default:
			return err
		}
	}
}

// waitReasons are what a PostgreSQL member waits for (instance.Retry).
var waitReasons = []instance.WaitReason{{Err: ErrNoPrimary, Reason: "waiting for the cluster"}}

func runPostgresOnce(ctx context.Context, p *Manager, out io.Writer) error {
	var role string
	var initialised bool
	err := instance.Retry(ctx, p.Log.Info, waitReasons, func() (err error) {
		role, initialised, err = p.Prepare(ctx)
		return err
	})
	if err != nil {
		return err
	}
	p.clearCleanStop(ctx)
	p.Log.Info("starting postgres", "member", p.Name, "role", role)
	s, err := p.Start(ctx, initialised, out)
	if err != nil {
		return err
	}
	if role == StartPrimary {
		go p.analyzeAfterUpgrade(ctx)
	}
	if role == StartReplica {
		go p.watchCatchUp(ctx, s)
	}
	err = p.watchdog(ctx, s)
	switch {
	case errors.Is(err, errDemoted):
		return err
	case ctx.Err() != nil:
		return p.stopClean(s)
	case p.rc.isPending():
		return errReclone
	}
	return &errCrashed{err: err, at: time.Now(), ready: s.ready}
}
