package instance

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is a running PostgreSQL server, a child of the instance manager.
type Server struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts the server in the role Prepare chose, waits until it
// accepts connections, and after an initdb creates the replication user.
// Output goes to out.
func (p *Postgres) Start(ctx context.Context, initialised bool, out io.Writer) (*Server, error) {
	args := []string{"-D", p.PGData}
	keys := make([]string, 0, len(p.Settings))
	for k := range p.Settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+p.Settings[k])
	}
	cmd := exec.Command(p.bin("postgres"), args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.Credential, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	self := p.Host + ":" + strconv.Itoa(p.Port)
	if err := p.waitReady(ctx, s, self); err != nil {
		s.Stop()
		return nil, err
	}
	if initialised {
		if err := p.createReplicationUser(ctx, self); err != nil {
			s.Stop()
			return nil, err
		}
	}
	p.Log.Info("postgres is up", "member", p.Name)
	return s, nil
}

func (p *Postgres) waitReady(ctx context.Context, s *Server, self string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := p.query(ctx, self, "SELECT true"); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections within 2m: %w", err)
		}
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited while starting: %v", s.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *Postgres) createReplicationUser(ctx context.Context, self string) error {
	// DDL takes no parameters; the password goes in as a quoted literal.
	err := p.exec(ctx, self, "CREATE ROLE "+ReplicationUser+" WITH REPLICATION LOGIN PASSWORD "+quoteLiteral(p.ReplicationPassword))
	if err != nil {
		return fmt.Errorf("create %s: %w", ReplicationUser, err)
	}
	return nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Stop shuts the server down fast (SIGINT: roll back open transactions,
// checkpoint, exit) and waits for it.
func (s *Server) Stop() error {
	select {
	case <-s.done:
		return s.err
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return s.err
}

// Kill stops the server at once, as a crash would.
func (s *Server) Kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// Wait waits for the server to exit.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}
