package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// UpgradeCheck runs pg_upgrade --check for a major upgrade while the
// cluster still runs, so an upgrade pg_upgrade would refuse (reg* columns,
// a library or extension the new major lacks, prepared transactions, an
// encoding the new cluster cannot match) is found before the offline step
// stops the primary. It never touches a member: it restores the cluster's
// newest verified base backup into Work, brings that copy to consistency
// and a clean shutdown in single-user mode (the base backup carries its
// WAL: no archive, no socket, no TCP), initialises a scratch cluster of
// the new major beside it, as the offline step does, and asks the new
// major's pg_upgrade to check the pair. It runs in the pre-flight step's
// Job, in the image of the offline step's init container.
type UpgradeCheck struct {
	// Cluster is the cluster whose backups are in Location (its backup
	// policy's storage location); Backup a backup ID or
	// contract.RestoreLatest.
	Cluster, Location, Backup string
	From, To                  int
	// OldBin and NewBin hold the two majors' programs.
	OldBin, NewBin string
	// Work is a scratch folder (the Job's emptyDir) both copies go in;
	// what the check leaves there is removed at its next run.
	Work string
	// ConfigFile is the cluster's rendered postgresql.conf, which both
	// copies include as the members and the offline step do, so a
	// library it preloads is checked too.
	ConfigFile string
	Credential *syscall.Credential
	Log        *slog.Logger
}

// ErrUpgradeRefused wraps pg_upgrade --check's refusal, as opposed to a
// check that could not run (no backup, a store that does not answer).
var ErrUpgradeRefused = errors.New("pg_upgrade --check refused the upgrade")

// Run checks the upgrade; its error carries pg_upgrade's findings.
func (c *UpgradeCheck) Run(ctx context.Context) error {
	old, next := filepath.Join(c.Work, "old"), filepath.Join(c.Work, "new")
	for _, d := range []string{old, next} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("clear the scratch folder: %w", err)
		}
	}
	st, m, err := instance.FindBackup(ctx, &instance.Restore{Location: c.Location, Cluster: c.Cluster, Backup: c.Backup})
	if err != nil {
		return err
	}
	major, err := backup.PostgresMajor(m.Version)
	if err != nil {
		return fmt.Errorf("backup %s of %s: %w", m.ID, m.Cluster, err)
	}
	if major != c.From {
		return fmt.Errorf("backup %s of %s is of PostgreSQL %s, not %d: the check needs a backup taken on the major being upgraded", m.ID, m.Cluster, m.Version, c.From)
	}
	oldPG, newPG, err := c.managers(old, next)
	if err != nil {
		return err
	}
	c.Log.Info("restoring the newest base backup for the upgrade check", "cluster", c.Cluster, "backup", m.ID, "from", c.From, "to", c.To)
	if _, err := backup.RestorePostgres(ctx, st, m, backup.PostgresRestore{DataDir: old, Chown: oldPG.chown,
		Finish: func(dir string) error { return c.recoverCopy(ctx, oldPG, dir) }}); err != nil {
		return fmt.Errorf("upgrade check: %w", err)
	}
	if err := newPG.initdb(ctx); err != nil {
		return fmt.Errorf("upgrade check: initialise the scratch %d cluster: %w", c.To, err)
	}
	if err := newPG.linkConfig(); err != nil {
		return err
	}
	out, err := c.pgUpgradeCheck(ctx, old, next)
	if err != nil {
		return fmt.Errorf("%w from %d to %d (backup %s of %s, taken %s): %s", ErrUpgradeRefused, c.From, c.To,
			m.ID, m.Cluster, m.Finished.UTC().Format("2006-01-02T15:04:05Z"), findings(out, err))
	}
	c.Log.Info("pg_upgrade --check passed", "cluster", c.Cluster, "backup", m.ID, "from", c.From, "to", c.To)
	for _, d := range []string{old, next} {
		if err := os.RemoveAll(d); err != nil {
			c.Log.Warn("could not clear the scratch folder", "path", d, "err", err.Error())
		}
	}
	return nil
}

// managers are the scratch copies' managers. The scratch cluster's
// superuser password is random and never used: pg_upgrade connects over
// its own socket as the server's OS user.
func (c *UpgradeCheck) managers(old, next string) (*Manager, *Manager, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, nil, err
	}
	mk := func(dir, bin string) *Manager {
		return &Manager{Name: c.Cluster + "-upgrade-check", PGData: dir, BinDir: bin, ConfigFile: c.ConfigFile,
			SuperuserPassword: hex.EncodeToString(b), Credential: c.Credential, Log: c.Log}
	}
	if err := mk(c.Work, c.OldBin).ensureDir(c.Work); err != nil {
		return nil, nil, err
	}
	return mk(old, c.OldBin), mk(next, c.NewBin), nil
}

// recoverCopy makes the unpacked backup in dir one pg_upgrade takes: a
// primary's data directory including the rendered config, recovered to
// consistency from the WAL it holds and shut down cleanly by a
// single-user run that archives nothing.
func (c *UpgradeCheck) recoverCopy(ctx context.Context, pg *Manager, dir string) error {
	for _, f := range []string{"standby.signal", "recovery.signal", "postmaster.pid"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := pg.linkConfigIn(dir); err != nil {
		return err
	}
	args := append([]string{"--single", "-D", dir}, scratchSettings...)
	cmd := exec.CommandContext(ctx, pg.bin("postgres"), append(args, contract.PostgresDatabase)...)
	cmd.Env = instance.ChildEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.Credential}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("recover the restored copy: %w: %s", err, lastLines(string(out), 8))
	}
	if st, err := controlState(dir); err != nil || st != dbShutdowned {
		return fmt.Errorf("the restored copy is in state %d, not shut down, after its recovery: %v", st, err)
	}
	return nil
}

// scratchSettings start the copies: no certificates in the Job (as in
// the offline step), nothing archived into the cluster's archive, and
// shared memory held small whatever the cluster's config asks, so the
// Job's memory stays bounded.
var scratchSettings = []string{"-c", "ssl=off", "-c", "archive_mode=off", "-c", "shared_buffers=128MB", "-c", "huge_pages=off"}

// pgUpgradeCheck runs the new major's pg_upgrade --check on the pair, in
// Work (its socket and log folder), and returns what it printed.
func (c *UpgradeCheck) pgUpgradeCheck(ctx context.Context, old, next string) (string, error) {
	args := []string{"--check", "--old-bindir", c.OldBin, "--new-bindir", c.NewBin,
		"--old-datadir", old, "--new-datadir", next, "--username", Superuser,
		"--old-options", strings.Join(scratchSettings, " "), "--new-options", strings.Join(scratchSettings, " ")}
	cmd := exec.CommandContext(ctx, filepath.Join(c.NewBin, "pg_upgrade"), args...)
	cmd.Dir = c.Work
	cmd.Env = instance.ChildEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.Credential}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// problemFile matches the lines where pg_upgrade names the file listing
// what it refuses ("    /path/pg_upgrade_output.d/.../tables_using_reg.txt").
var problemFile = regexp.MustCompile(`(?m)^\s+(/\S+\.txt)\s*$`)

// findings is pg_upgrade's refusal in its own words: from its first
// failed check on (its "Checking ..." lines that passed are left out),
// with the head of each problem list it names, bounded.
func findings(out string, err error) string {
	text := strings.TrimSpace(out)
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasSuffix(strings.TrimSpace(l), "fatal") {
			text = strings.Join(lines[i:], "\n")
			break
		}
	}
	if text == strings.TrimSpace(out) {
		text = lastLines(text, 20)
	}
	var b strings.Builder
	b.WriteString(text)
	for _, m := range problemFile.FindAllStringSubmatch(out, 3) {
		if data, rerr := os.ReadFile(m[1]); rerr == nil {
			fmt.Fprintf(&b, "\n%s:\n%s", filepath.Base(m[1]), clip(strings.TrimSpace(string(data)), 1024))
		}
	}
	if b.Len() == 0 {
		return err.Error()
	}
	return clip(b.String(), 3072)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
