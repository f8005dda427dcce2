package postgres

import (
	"context"
	byteorder "encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// ServeWAL starts the member's WAL server on WALSocket (walserver.go),
// until ctx ends: pushes into the cluster's archive when its config names
// one, fetches for a point-in-time restore, and fetches for the member's
// own server while it is a standby (standbyRestore).
func (p *Manager) ServeWAL(ctx context.Context) error {
	if p.WALSocket == "" {
		return errors.New("no WAL socket is set")
	}
	s := &WALServer{Socket: p.WALSocket, PGData: p.PGData, Credential: p.Credential, Log: p.Log}
	if loc := p.Config.ArchiveLocation; loc != "" {
		open := sync.OnceValues(func() (backup.Store, error) { return backup.OpenFromEnv(loc) })
		s.Archive = func(system uint64) (backup.WALArchive, error) {
			st, err := open()
			return backup.WALArchive{Store: st, Cluster: p.Cluster, System: system}, err
		}
	}
	ready := make(chan error, 1)
	go func() {
		if err := s.Serve(ctx, ready); err != nil {
			p.Log.Error("the WAL server stopped", "member", p.Name, "err", err.Error())
		}
	}()
	if err := <-ready; err != nil {
		return err
	}
	p.wal = s
	return nil
}

// serverSettings are the -c settings the member's server starts with:
// Settings, and standbyRestore's.
func (p *Manager) serverSettings() map[string]string {
	settings := maps.Clone(p.Settings)
	if settings == nil {
		settings = map[string]string{}
	}
	maps.Copy(settings, p.standbyRestore())
	maps.Copy(settings, p.crashSettings())
	return settings
}

// standbyRestore gives a standby of a cluster that archives WAL a
// restore_command through the WAL server: segments its primary removed
// before the standby received them (beyond wal_keep_size, or while the
// standby was down) are read from the archive, and it catches up without
// a new clone. PostgreSQL runs restore_command only during recovery, so
// the setting is inert once the member is promoted. It is the instance
// manager's, on the command line, never in a rendered file: the rendered
// manifests of a cluster stay the same. Nil for a primary, a cluster
// without a backup location, or a manager that serves no WAL socket.
func (p *Manager) standbyRestore() map[string]string {
	if p.Config.ArchiveLocation == "" || p.WALCommand == "" || p.wal == nil || !p.isStandby() {
		return nil
	}
	if _, set := p.Settings["restore_command"]; set {
		return nil
	}
	return map[string]string{"restore_command": p.WALCommand + " fetch %f %p"}
}

// recoverTo replays path's archived WAL into the unpacked backup in dir,
// up to target (an RFC 3339 time, or contract.RestoreLatest for all of
// it): a server of its own on a private socket, no TCP, no archiving,
// fetching through the WAL server, promoting at the target. It returns
// once the server has promoted and shut down cleanly. PostgreSQL ends
// such a recovery with an error when it cannot reach the target
// (PostgreSQL 13 and later), and a segment the path needs that cannot be
// fetched aborts it (wal.ExitFailed): the restore fails, and no data
// directory is put in place.
func (p *Manager) recoverTo(ctx context.Context, dir string, path *backup.RecoveryPath, target string) error {
	t, err := backup.ParseTarget(target)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if p.wal == nil || p.WALCommand == "" {
		return errors.New("restore to a target: the instance manager serves no WAL socket")
	}
	done := p.wal.Recover(dir, path)
	defer done()
	sock, err := os.MkdirTemp("", "cairn-recover-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(sock)
	signal := filepath.Join(dir, "recovery.signal")
	if err := os.WriteFile(signal, nil, 0o600); err != nil {
		return err
	}
	for _, f := range []string{sock, signal} {
		if err := p.chown(f); err != nil {
			return err
		}
	}
	settings := maps.Clone(p.Settings)
	if settings == nil {
		settings = map[string]string{}
	}
	maps.Copy(settings, map[string]string{
		"listen_addresses": "", "unix_socket_directories": sock,
		"archive_mode": "off", "ssl": "off", "hot_standby": "off", "synchronous_standby_names": "",
	})
	maps.Copy(settings, backup.RecoverySettings(p.WALCommand+" fetch %f %p", t))
	args := []string{"-D", dir}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", k+"="+settings[k])
	}
	out := &tailWriter{max: 16 << 10}
	cmd := exec.Command(p.bin("postgres"), args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = instance.ChildEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.Credential, Setpgid: true}
	p.Log.Info("replaying archived WAL", "member", p.Name, "timeline", path.Timeline, "last", path.Last, "target", target)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("restore: start the recovery: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("restore: the recovery to %s stopped before it promoted: %v: %s", target, err, lastLines(out.String(), 8))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-exited
			return ctx.Err()
		case <-tick.C:
		}
		// Promoted once the signal file is gone and pg_control says in
		// production again: the backup's copy said so before recovery
		// began, and the signal file goes before the new timeline's first
		// record is written.
		if _, err := os.Stat(signal); errors.Is(err, os.ErrNotExist) {
			if st, err := controlState(dir); err == nil && st == dbInProduction {
				break
			}
		}
	}
	_ = cmd.Process.Signal(syscall.SIGINT) // a fast shutdown, with its checkpoint
	if err := <-exited; err != nil {
		return fmt.Errorf("restore: the recovered server did not shut down cleanly: %v: %s", err, lastLines(out.String(), 8))
	}
	if st, err := controlState(dir); err != nil || st != dbShutdowned {
		return fmt.Errorf("restore: the recovered server left its data directory in state %d, not shut down: %v: %s", st, err, lastLines(out.String(), 8))
	}
	p.Log.Info("recovered", "member", p.Name, "target", target, "log", lastLines(out.String(), 4))
	return nil
}

// The states of pg_control's state field (DBState) controlState reads.
const (
	dbShutdowned   = 1
	dbInProduction = 6
)

// controlState reads the cluster state of dir's pg_control: the int32
// after the system identifier and two uint32 versions, where every major
// from 13 to 18 keeps it.
func controlState(dir string) (int32, error) {
	b, err := readControl(dir, 16, 4)
	if err != nil {
		return 0, err
	}
	return int32(byteorder.NativeEndian.Uint32(b)), nil
}

// readControl reads n bytes at off of dir's global/pg_control, whose
// fields are in the machine's byte order.
func readControl(dir string, off int64, n int) ([]byte, error) {
	f, err := os.Open(filepath.Join(dir, "global", "pg_control"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = w.buf[over:]
	}
	return len(b), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
