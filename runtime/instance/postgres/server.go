package postgres

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/runtime/instance"
)

// Server is a running PostgreSQL server, a child of the instance manager.
type Server struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	// ready is when it first accepted connections.
	ready time.Time
	// pgdata is its data directory, where its postmaster.pid is.
	pgdata string
}

// Start starts the server in the role Prepare chose, waits until it
// accepts connections, and after an initdb creates the replication user.
// Output goes to out.
func (p *Manager) Start(ctx context.Context, initialised bool, out io.Writer) (*Server, error) {
	args := []string{"-D", p.PGData}
	settings := p.serverSettings()
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", k+"="+settings[k])
	}
	cmd := exec.Command(p.bin("postgres"), args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = instance.ChildEnv() // the server never holds the passwords or the store's keys
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.Credential, Setpgid: true}
	// The postmaster's children share its output: one that outlives it
	// (stopped, or stuck in a system call) must not keep Wait, and with
	// it the instance manager, from seeing the server gone.
	cmd.WaitDelay = outputGrace
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{}), pgdata: p.PGData}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	// From its start, not from when it first answers: a server in a long
	// recovery, or one that cannot answer because the certificate it
	// started with has expired, gets a renewed one meanwhile.
	go p.keepCerts(ctx, s)
	self := p.Host + ":" + strconv.Itoa(p.Port)
	if err := p.waitReady(ctx, s, self); err != nil {
		s.Stop()
		return nil, err
	}
	s.ready = time.Now()
	if initialised || p.isPrimary(ctx, self) {
		if err := p.ensureReplicationUser(ctx, self); err != nil {
			return nil, s.failedAfterReady(err)
		}
	}
	p.Log.Info("postgres is up", "member", p.Name)
	return s, nil
}

// waitReady waits for the server to accept connections for as long as it
// runs: crash recovery may take long, and the pod's startup probe, not a
// deadline here, decides when to give up.
func (p *Manager) waitReady(ctx context.Context, s *Server, self string) error {
	logged := time.Now()
	for {
		_, err := p.query(ctx, self, "SELECT true")
		if err == nil {
			return nil
		}
		if time.Since(logged) > time.Minute {
			p.Log.Info("postgres is still starting", "member", p.Name, "err", err.Error())
			logged = time.Now()
		}
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited while starting: %w", s.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *Manager) isPrimary(ctx context.Context, self string) bool {
	inRecovery, err := p.query(ctx, self, "SELECT pg_is_in_recovery()")
	return err == nil && !inRecovery
}

// ensureReplicationUser creates the replication user, or sets its
// password, on every start of a primary: a crash right after initdb, or a
// rotated Secret, heals on the next start. The password is sent only as a
// SCRAM verifier computed here, so no statement or log line holds it.
func (p *Manager) ensureReplicationUser(ctx context.Context, self string) error {
	verifier, err := scramVerifier(p.ReplicationPassword)
	if err != nil {
		return err
	}
	// Committed locally: with synchronous standbys wanted, none can clone
	// before this user exists.
	stmt := fmt.Sprintf(`DO $cairn$ BEGIN
PERFORM set_config('synchronous_commit', 'local', true);
IF EXISTS (SELECT FROM pg_roles WHERE rolname = '%[1]s') THEN
  ALTER ROLE %[1]s WITH REPLICATION LOGIN PASSWORD %[2]s;
ELSE
  CREATE ROLE %[1]s WITH REPLICATION LOGIN PASSWORD %[2]s;
END IF;
END $cairn$`, ReplicationUser, quoteLiteral(verifier))
	if err := p.execQuiet(ctx, self, stmt); err != nil {
		return fmt.Errorf("ensure the %s user: %w", ReplicationUser, err)
	}
	return nil
}

// failedAfterReady stops a server whose start failed after it accepted
// connections, and returns err; but a server that exits on its own
// meanwhile (within crashedGrace: a statement fails as the server dies,
// before its exit is seen) crashed, like any other, and is restarted in
// place (errCrashed).
func (s *Server) failedAfterReady(err error) error {
	select {
	case <-s.done:
		return &errCrashed{err: s.err, at: time.Now(), ready: s.ready}
	case <-time.After(crashedGrace):
	}
	s.Stop()
	return err
}

// Stop shuts the server down fast (SIGINT: roll back open transactions,
// checkpoint, exit) and waits for it; a server still running stopTimeout
// later is killed with all its processes.
func (s *Server) Stop() error {
	select {
	case <-s.done:
		return s.err
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		s.Kill()
	}
	return s.err
}

const (
	// stopTimeout bounds a fast shutdown.
	stopTimeout = 60 * time.Second
	// outputGrace is how long the server's output is read after the
	// postmaster exits.
	outputGrace = 10 * time.Second
	// crashedGrace is how long a start that failed after the server was
	// ready waits to see whether the server died.
	crashedGrace = time.Second
)

// stopWithin shuts the server down fast and kills it if it has not exited
// after grace.
func (s *Server) stopWithin(grace time.Duration) {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(grace):
		s.Kill()
	}
}

// reload asks the server to read its configuration and certificates
// again (SIGHUP, as pg_ctl reload).
func (s *Server) reload() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGHUP)
	}
}

// handlesSignals reports whether the postmaster has set up its signal
// handlers, so that a SIGHUP reloads it: until it has, SIGHUP's default
// action would end it. It sets them up first thing, before it writes
// its PID into the data directory's postmaster.pid.
func (s *Server) handlesSignals() bool {
	pid, ok, err := lockPID(s.pgdata)
	return err == nil && ok && pid == s.cmd.Process.Pid
}

// Kill stops the server at once, as a crash would: the postmaster and
// every process it started (KillPostmaster).
func (s *Server) Kill() {
	KillPostmaster(s.cmd.Process.Pid)
	<-s.done
}

// Wait waits for the server to exit.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}
