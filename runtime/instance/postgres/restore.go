package postgres

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// restorePostgres restores the create step's base backup as the first
// member's data directory, in place of initdb. The backup's roles come
// with it, so the superuser's password is set to the new cluster's (in
// single-user mode) before the copy is renamed into place: a restore cut
// off at any point leaves no data directory, and the next start restores
// again. The replication user's password is set after the first start, as
// for a new cluster.
func (p *Manager) restorePostgres(ctx context.Context) error {
	st, m, err := instance.FindBackup(ctx, p.Config.Restore)
	if err != nil {
		return err
	}
	// A data directory of another major does not start: say so before
	// anything is unpacked.
	major, err := p.binaryMajor()
	if err != nil {
		return err
	}
	backupMajor, err := backup.PostgresMajor(m.Version)
	if err != nil {
		return fmt.Errorf("restore: backup %s of %s: %w", m.ID, m.Cluster, err)
	}
	if strconv.Itoa(backupMajor) != major {
		return fmt.Errorf("restore: backup %s of %s is of PostgreSQL %s, and this member runs PostgreSQL %s: a base backup restores only into its own major; restore it into a cluster at %d, then upgrade that cluster", m.ID, m.Cluster, m.Version, major, backupMajor)
	}
	if err := os.RemoveAll(p.PGData); err != nil {
		return err
	}
	// The WAL the restore replays is checked before anything is unpacked:
	// a gap, or a target the archive does not reach, is refused here.
	var path *backup.RecoveryPath
	if r := p.Config.Restore; r.Target != "" {
		target, err := backup.ParseTarget(r.Target) // zero for latest
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		rp, err := backup.PlanRecovery(ctx, st, m, target)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		path = &rp
	}
	p.Log.Info("restoring the create step's base backup", "member", p.Name, "backup", m.ID, "of", m.Cluster, "target", p.Config.Restore.Target)
	r, err := backup.RestorePostgres(ctx, st, m, backup.PostgresRestore{DataDir: p.PGData, Chown: p.chown,
		Finish: func(dir string) error { return p.finishRestore(ctx, dir, path) }})
	if err != nil {
		return err
	}
	if len(r.Dropped) > 0 {
		// Configuration and files outside the data layout never come
		// back from a backup: the spec's settings apply.
		p.Log.Info("left out what the backup holds outside PostgreSQL's data layout", "member", p.Name, "backup", m.ID,
			"count", len(r.Dropped), "entries", firstEntries(r.Dropped, 10))
	}
	return nil
}

// firstEntries is at most n of names, and how many more there are.
func firstEntries(names []string, n int) string {
	if len(names) > n {
		return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
	}
	return strings.Join(names, ", ")
}

// finishRestore prepares an unpacked base backup to start as the new
// cluster's primary, replaying path's archived WAL first when the
// restore has a target.
func (p *Manager) finishRestore(ctx context.Context, dir string, path *backup.RecoveryPath) error {
	// A backup taken from a replica carries its standby.signal: the new
	// cluster's first member is a primary.
	for _, f := range []string{"standby.signal", "recovery.signal", "postmaster.pid"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := p.linkConfigIn(dir); err != nil {
		return err
	}
	if path != nil {
		if err := p.recoverTo(ctx, dir, path, p.Config.Restore.Target); err != nil {
			return err
		}
	}
	return p.setSuperuserPassword(ctx, dir)
}

// setSuperuserPassword runs postgres --single once on dir: it recovers the
// restored copy to consistency and sets the password, given as a SCRAM
// verifier on standard input, never on a command line, and never echoed
// in what is reported when it fails.
func (p *Manager) setSuperuserPassword(ctx context.Context, dir string) error {
	verifier, err := scramVerifier(p.SuperuserPassword)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, p.bin("postgres"), "--single", "-D", dir,
		"-c", "log_min_error_statement=panic", "-c", "log_statement=none", "-c", "log_min_duration_statement=-1", "-c", "log_duration=off", contract.PostgresDatabase)
	cmd.Stdin = strings.NewReader(fmt.Sprintf("ALTER ROLE %s WITH PASSWORD %s;\n", Superuser, quoteLiteral(verifier)))
	cmd.Env = instance.ChildEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.Credential}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("set the superuser password of the restored copy: %w: %s", err, lastLines(withoutSecrets(string(out)), 5))
	}
	return nil
}

// withoutSecrets drops the lines that could echo the statement.
func withoutSecrets(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(strings.ToUpper(l), "PASSWORD") && !strings.Contains(l, "SCRAM-SHA-256$") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
