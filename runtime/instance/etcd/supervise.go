package etcd

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// ExitError: etcd ended on its own with a status other than 0 (or
// had to be killed); the instance manager exits with Code, as the pod's
// process would had it been etcd itself.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Supervise runs etcd (bin) as a child until it ends or ctx does, with
// TLS on. args are the flags of etcd's first start (nil: decided by
// Args, waiting while the member cannot start). It reads the mounted CA
// bundle every RestartTurns.Poll and, when the bundle's set of
// certificates changes, restarts etcd in its turn (decideRestart),
// stopping it gracefully and starting it with flags decided afresh from
// its data, so that etcd trusts a new CA before the runtime issues
// leaves from it (ca.go). When ctx ends (the pod's SIGTERM or
// SIGINT) it stops etcd with SIGTERM, which etcd handles as either, and
// returns nil if etcd stopped cleanly. When etcd ends on its own it
// returns an *ExitError with etcd's status, or nil for 0.
func (e *Manager) Supervise(ctx context.Context, bin string, args []string, stdout, stderr io.Writer) error {
	ord, err := contract.PodOrdinal(e.Name)
	if err != nil {
		return err
	}
	for {
		if args == nil {
			if args, err = e.startArgs(ctx); err != nil {
				return err
			}
		}
		// Read before etcd starts: a bundle swapped in between is read by
		// etcd and looks changed here, which costs a restart, never a
		// missed one.
		bundle := readCABundle(e.TLSDir)
		p, err := startEtcd(bin, args, stdout, stderr)
		if err != nil {
			return err
		}
		e.Log.Info("etcd started", "member", e.Name, "pid", p.cmd.Process.Pid, "caBundle", bundle.id())
		restart, err := e.watch(ctx, p, bundle, ord)
		if !restart {
			return err
		}
		if ctx.Err() != nil {
			return nil // stopped during the restart, cleanly
		}
		e.rereadConfig()
		args = nil
	}
}

// rereadConfig reads the mounted config again before a restart, as a new
// container would: a merged step (a scale-in removing this member) may
// have changed it since the instance manager started. An unreadable
// config keeps the one read before.
func (e *Manager) rereadConfig() {
	if e.ConfigDir == "" {
		return
	}
	cfg, err := ReadConfig(e.ConfigDir)
	if err != nil {
		e.Log.Warn("the config cannot be read again; restarting with the one read at start", "member", e.Name, "err", err.Error())
		return
	}
	e.Config = cfg
}

// watch waits for etcd to end, for ctx to end, or for its turn to
// restart etcd onto a changed CA bundle; it reports which (restart) and,
// when it does not restart, how etcd ended.
func (e *Manager) watch(ctx context.Context, p *etcdProc, running caBundle, ord int) (restart bool, err error) {
	log := e.Log.With("member", e.Name)
	// Poll often enough that every turn's first half sees a poll.
	tick := time.NewTicker(min(e.Turns.poll(), e.Turns.turn()/3))
	defer tick.Stop()
	said := ""
	for {
		select {
		case <-p.done:
			err := p.exitErr()
			if err != nil {
				log.Warn("etcd exited on its own", "err", err.Error())
			} else {
				log.Info("etcd exited on its own with status 0")
			}
			return false, err
		case <-ctx.Done():
			log.Info("stopping etcd")
			p.stop(e.Turns.stop())
			return false, p.exitErr()
		case <-tick.C:
		}
		cur := readCABundle(e.TLSDir)
		if cur.sum == running.sum {
			said = ""
			continue
		}
		d := decideRestart(e.observeTurn(ctx, cur, ord))
		if !d.Restart {
			if d.Reason != said {
				log.Info("the CA bundle changed; etcd waits to restart onto it", "reason", d.Reason, "caBundle", cur.id())
				said = d.Reason
			}
			continue
		}
		log.Info("restarting etcd to load its changed CA bundle", "reason", d.Reason, "from", running.id(), "to", cur.id())
		p.stop(e.Turns.stop())
		if err := p.exitErr(); err != nil {
			log.Warn("etcd did not stop cleanly; starting it again", "err", err.Error())
		}
		return true, nil
	}
}

// id names a bundle's set of certificates in the log.
func (b caBundle) id() string { return hex.EncodeToString(b.sum[:6]) }

// etcdProc is a running etcd.
type etcdProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
	// stopping: a SIGTERM of ours is on its way, so dying of it is a
	// clean stop.
	stopping atomic.Bool
}

func startEtcd(bin string, args []string, stdout, stderr io.Writer) (*etcdProc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Args[0] = "etcd"
	cmd.Env = instance.ChildEnv()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// No Pdeathsig: Linux sends it when the thread that started the child
	// ends, not the process, and Go may end a thread. In a pod the
	// instance manager is the first process of the container's PID
	// namespace, and its end ends etcd.
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	p := &etcdProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop sends etcd SIGTERM (a leader hands its leadership over first) and
// waits up to timeout for it to exit, then kills it.
func (p *etcdProc) stop(timeout time.Duration) {
	p.stopping.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exitErr is how etcd ended: nil for status 0 and, during a stop, for
// dying of SIGTERM or SIGINT (a terminal's Ctrl-C reaches etcd too; etcd,
// as a container's first process, exits 0 on either); else an
// *ExitError with its status, 128 + the signal's number when a
// signal ended it, as a shell reports it.
func (p *etcdProc) exitErr() error {
	<-p.done
	if p.err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) {
		return &ExitError{Code: 1, Err: fmt.Errorf("etcd: %w", p.err)}
	}
	code := ee.ExitCode()
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if p.stopping.Load() && (ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGINT) {
			return nil
		}
		code = 128 + int(ws.Signal())
	}
	return &ExitError{Code: code, Err: fmt.Errorf("etcd exited with status %d: %w", code, p.err)}
}
