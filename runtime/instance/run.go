package instance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// retryDelay is how long a member waits before it tries again to find its
// cluster.
const retryDelay = 5 * time.Second

// RunEtcd runs the pod's etcd member: it decides how the member starts,
// waiting while it cannot, and starts etcd. With the cluster's TLS on,
// the instance manager stays etcd's parent (Supervise): it restarts
// etcd, in turn with the other members, when the mounted CA bundle
// changes, which etcd reads only when it starts. With TLS off there is
// no bundle to follow, so, as before TLS, it replaces this process with
// etcd, which then receives the pod's signals itself: clusters rendered
// before TLS run exactly as they did.
func RunEtcd(ctx context.Context, e *Etcd) error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return fmt.Errorf("etcd binary: %w", err)
	}
	if e.Version == "" {
		if e.Version, err = EtcdBinaryVersion(ctx, bin); err != nil {
			e.Log.Warn("the etcd binary's version is unknown", "err", err.Error())
		}
	}
	args, err := e.startArgs(ctx)
	if err != nil {
		return err
	}
	if contract.TLSOn(e.Config.TLS) {
		return e.Supervise(ctx, bin, args, os.Stdout, os.Stderr)
	}
	return syscall.Exec(bin, append([]string{"etcd"}, args...), childEnv())
}

// RunPostgres prepares the member, waiting while it cannot start, starts
// PostgreSQL as a child and watches it: a primary labelled away, or
// unconfirmed for its lease, is stopped and prepared again (rewound, to
// follow); a replica that cannot catch up is stopped and re-cloned
// (pgcatchup.go, pgreclone.go). On SIGTERM or SIGINT it shuts the server
// down fast. It returns when the server exits on its own or ctx ends.
func RunPostgres(ctx context.Context, p *Postgres, out io.Writer) error {
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
		if !errors.Is(err, errDemoted) && !errors.Is(err, errReclone) {
			return err
		}
	}
}

func runPostgresOnce(ctx context.Context, p *Postgres, out io.Writer) error {
	var role string
	var initialised bool
	err := retry(ctx, p.Log.Info, func() (err error) {
		role, initialised, err = p.Prepare(ctx)
		return err
	})
	if err != nil {
		return err
	}
	p.Log.Info("starting postgres", "member", p.Name, "role", role)
	s, err := p.Start(ctx, initialised, out)
	if err != nil {
		return err
	}
	if role == StartPrimary {
		go p.analyzeAfterUpgrade(ctx)
	}
	go p.keepCerts(ctx, s)
	if role == StartReplica {
		go p.watchCatchUp(ctx, s)
	}
	err = p.watchdog(ctx, s)
	switch {
	case errors.Is(err, errDemoted):
		return err
	case ctx.Err() != nil:
		return s.Stop()
	case p.rc.isPending():
		return errReclone
	}
	return fmt.Errorf("postgres exited: %v", err)
}

// retry calls fn until it succeeds, logging each wait; ErrNoCluster,
// ErrNoPrimary, ErrDataLost, ErrRemoving and transient errors are all
// waited out while the pod stays not ready (its startup probe allows an
// hour before Kubernetes restarts it).
func retry(ctx context.Context, logf func(msg string, args ...any), fn func() error) error {
	for {
		err := fn()
		if err == nil {
			return nil
		}
		reason := "error"
		switch {
		case errors.Is(err, ErrNoCluster), errors.Is(err, ErrNoPrimary):
			reason = "waiting for the cluster"
		case errors.Is(err, ErrNoCerts):
			reason = "waiting for the runtime to issue the cluster's certificates"
		case errors.Is(err, ErrDataLost):
			reason = "waiting for the runtime to replace this member"
		case errors.Is(err, ErrRemoving):
			reason = "waiting for the StatefulSet to shrink"
		}
		logf("cannot start yet", "reason", reason, "err", err.Error(), "retry_in", retryDelay.String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryDelay):
		}
	}
}
