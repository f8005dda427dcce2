package postgres

import (
	"bufio"
	"context"
	byteorder "encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/wal"
)

// WAL archiving and fetching go through the instance manager: PostgreSQL
// runs archive_command and restore_command as its own children, and the
// server and its children never hold the store's credentials (instance.ChildEnv).
// The commands are `cairn instance wal push|fetch`, clients of a Unix
// socket the instance manager serves (WALServer; the protocol and the
// client are runtime/wal): it checks each request, reads or writes the
// file and talks to the store.

// WALServer serves the WAL commands of one member.
type WALServer struct {
	// Socket is the Unix socket's path, in a folder only the member's
	// user can write (the server's socket folder in a pod).
	Socket string
	// PGData is the member's data directory: pushes archive from its
	// pg_wal only, and its pg_control names the system.
	PGData string
	// Archive opens the cluster's archive for a system; nil refuses every
	// push (the cluster archives no WAL).
	Archive func(system uint64) (backup.WALArchive, error)
	// Credential, when set, is the server's user (the manager runs as
	// root in tests): the socket and fetched files are given to it.
	Credential *syscall.Credential
	Log        *slog.Logger

	mu sync.Mutex
	// recovery is the path a restore under way reads, and dir the data
	// directory it recovers; fetches are refused without one.
	recovery *backup.RecoveryPath
	dir      string
}

// Recover lets fetches read path into dir's pg_wal until the returned
// func is called.
func (s *WALServer) Recover(dir string, path *backup.RecoveryPath) (done func()) {
	s.mu.Lock()
	s.recovery, s.dir = path, dir
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.recovery, s.dir = nil, ""
		s.mu.Unlock()
	}
}

// Serve listens on Socket until ctx ends; ready gets nil once it
// listens, or the error that stopped it first.
func (s *WALServer) Serve(ctx context.Context, ready chan<- error) error {
	l, err := s.listen()
	ready <- err
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); l.Close() }()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("WAL socket: %w", err)
		}
		go s.handle(ctx, c)
	}
}

func (s *WALServer) listen() (net.Listener, error) {
	if err := os.Remove(s.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("WAL socket: %w", err)
	}
	l, err := net.Listen("unix", s.Socket)
	if err != nil {
		return nil, fmt.Errorf("WAL socket: %w", err)
	}
	err = os.Chmod(s.Socket, 0o600)
	if err == nil {
		err = s.chown(s.Socket)
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("WAL socket: %w", err)
	}
	return l, nil
}

func (s *WALServer) chown(path string) error {
	if s.Credential == nil {
		return nil
	}
	return os.Chown(path, int(s.Credential.Uid), int(s.Credential.Gid))
}

func (s *WALServer) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Minute))
	// A request is a name and a path: a line of a few hundred bytes.
	line, err := bufio.NewReader(io.LimitReader(c, 64<<10)).ReadBytes('\n')
	var reply wal.Reply
	var req wal.Request
	switch {
	case err != nil:
		reply.Error = "read request: " + err.Error()
	case json.Unmarshal(line, &req) != nil:
		reply.Error = "the request is not JSON"
	default:
		err = s.do(ctx, req)
		switch {
		case err == nil:
			reply.OK = true
		case errors.Is(err, backup.ErrNotFound):
			reply.Missing = true
		default:
			reply.Error = err.Error()
			s.Log.Warn("WAL "+req.Op+" failed", "file", req.Name, "err", err.Error())
		}
	}
	data, _ := json.Marshal(reply)
	_, _ = c.Write(append(data, '\n'))
}

func (s *WALServer) do(ctx context.Context, req wal.Request) error {
	if err := backup.CheckWALName(req.Name); err != nil {
		return err
	}
	switch req.Op {
	case wal.OpPush:
		if s.Archive == nil {
			return errors.New("this cluster archives no WAL (its config names no backup location)")
		}
		if want := filepath.Join(s.PGData, "pg_wal", req.Name); filepath.Clean(req.Path) != want {
			return fmt.Errorf("archive %s: %s is not %s", req.Name, req.Path, want)
		}
		system, err := SystemIdentifier(s.PGData)
		if err != nil {
			return err
		}
		a, err := s.Archive(system)
		if err != nil {
			return err
		}
		return a.Push(ctx, req.Name, req.Path)
	case wal.OpFetch:
		s.mu.Lock()
		path, dir := s.recovery, s.dir
		s.mu.Unlock()
		if path == nil {
			return s.fetchForStandby(ctx, req)
		}
		if !strings.HasPrefix(filepath.Clean(req.Path), filepath.Join(dir, "pg_wal")+string(filepath.Separator)) {
			return fmt.Errorf("fetch %s: %s is outside the pg_wal of %s", req.Name, req.Path, dir)
		}
		err := path.Archive.Fetch(ctx, req.Name, req.Path)
		if errors.Is(err, backup.ErrNotFound) && path.Needs(req.Name) {
			return fmt.Errorf("fetch %s: the archive listed it when the restore began and no longer has it (%v)", req.Name, err)
		}
		if err != nil {
			return err
		}
		return s.chown(req.Path)
	}
	return fmt.Errorf("unknown WAL operation %q", req.Op)
}

// fetchForStandby serves the restore_command of the member's own server
// when no restore is under way: a replica of a cluster that archives WAL
// reads the segments its primary no longer keeps from the archive of its
// own system, into its own pg_wal. A file the archive does not hold is
// ErrNotFound (exit 1), and PostgreSQL goes on streaming. So is an
// archive that cannot be read or a damaged copy, logged here: an exit
// above 125 would stop a standby's recovery, and with it a replica that
// can still stream from its primary.
func (s *WALServer) fetchForStandby(ctx context.Context, req wal.Request) error {
	if s.Archive == nil {
		return errors.New("no restore is under way and this cluster archives no WAL")
	}
	if !strings.HasPrefix(filepath.Clean(req.Path), filepath.Join(s.PGData, "pg_wal")+string(filepath.Separator)) {
		return fmt.Errorf("fetch %s: %s is outside the pg_wal of %s", req.Name, req.Path, s.PGData)
	}
	err := s.fetchOwn(ctx, req)
	if err == nil || errors.Is(err, backup.ErrNotFound) {
		return err
	}
	s.Log.Warn("a standby's WAL fetch failed: it goes on streaming", "file", req.Name, "err", err.Error())
	return fmt.Errorf("fetch %s for the standby: %v: %w", req.Name, err, backup.ErrNotFound)
}

// fetchOwn fetches req's file from the archive of the member's system.
func (s *WALServer) fetchOwn(ctx context.Context, req wal.Request) error {
	system, err := SystemIdentifier(s.PGData)
	if err != nil {
		return err
	}
	a, err := s.Archive(system)
	if err != nil {
		return err
	}
	if err := a.Fetch(ctx, req.Name, req.Path); err != nil {
		return err
	}
	return s.chown(req.Path)
}

// SystemIdentifier reads the system identifier from the first field of
// dir's global/pg_control (a uint64 in the machine's byte order).
func SystemIdentifier(dir string) (uint64, error) {
	b, err := readControl(dir, 0, 8)
	if err != nil {
		return 0, fmt.Errorf("system identifier: %w", err)
	}
	id := byteorder.NativeEndian.Uint64(b)
	if id == 0 {
		return 0, errors.New("system identifier: pg_control holds none")
	}
	return id, nil
}
