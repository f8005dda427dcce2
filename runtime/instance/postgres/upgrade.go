package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// Upgrade upgrades member 0's data directory to a new PostgreSQL major
// with pg_upgrade --link. It runs in an init container of an image that
// has both majors, before the new server starts; on every other start it
// does nothing. Replicas are not upgraded: they are cloned anew from the
// upgraded primary.
type Upgrade struct {
	Name     string
	PGData   string
	From, To int
	// OldBin and NewBin hold the two majors' programs.
	OldBin, NewBin string
	// ConfigFile is the rendered postgresql.conf both clusters include.
	ConfigFile        string
	SuperuserPassword string
	Credential        *syscall.Credential
	Log               *slog.Logger
}

// Run upgrades the data directory if it is member 0's and still on From.
func (u *Upgrade) Run(ctx context.Context) error {
	ord, err := contract.PodOrdinal(u.Name)
	if err != nil {
		return err
	}
	if done, err := u.finishSwap(); err != nil || done {
		return err
	}
	data, err := os.ReadFile(filepath.Join(u.PGData, "PG_VERSION"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		u.Log.Info("no data directory yet; nothing to upgrade", "member", u.Name)
		return nil
	case err != nil:
		return err
	case ord != 0:
		u.Log.Info("a replica is not upgraded: it clones from the upgraded primary", "member", u.Name)
		return nil
	}
	switch v := strings.TrimSpace(string(data)); v {
	case strconv.Itoa(u.To):
		u.Log.Info("data directory is already on the new major", "member", u.Name, "major", v)
		return nil
	case strconv.Itoa(u.From):
		return u.upgrade(ctx)
	default:
		return fmt.Errorf("%s is on PostgreSQL %s; this upgrade goes from %d to %d", u.PGData, v, u.From, u.To)
	}
}

func (u *Upgrade) paths() (next, old string) {
	base := strings.TrimRight(u.PGData, "/")
	return base + ".pg" + strconv.Itoa(u.To) + "-new", base + ".pg" + strconv.Itoa(u.From)
}

// finishSwap completes an upgrade interrupted after pg_upgrade succeeded:
// the new directory is complete (pg_upgrade removes its output folder
// last) and only the renames are missing.
func (u *Upgrade) finishSwap() (bool, error) {
	next, old := u.paths()
	version, err := os.ReadFile(filepath.Join(next, "PG_VERSION"))
	if err != nil || strings.TrimSpace(string(version)) != strconv.Itoa(u.To) {
		return false, nil
	}
	if ok, _ := instance.Exists(filepath.Join(next, "pg_upgrade_output.d")); ok {
		return false, nil // pg_upgrade did not finish: upgrade() starts over
	}
	if ok, _ := instance.Exists(filepath.Join(u.PGData, "global", "pg_control.old")); ok {
		if err := os.Rename(u.PGData, old); err != nil {
			return false, fmt.Errorf("finish the upgrade: %w", err)
		}
	}
	if ok, _ := instance.Exists(u.PGData); ok {
		return false, nil
	}
	if err := os.Rename(next, u.PGData); err != nil {
		return false, fmt.Errorf("finish the upgrade: %w", err)
	}
	u.Log.Info("finished an interrupted upgrade", "member", u.Name, "kept_at", old)
	return true, nil
}

// upgrade runs pg_upgrade from PGData into a new data directory and swaps
// them; the old directory is kept beside it, never deleted.
func (u *Upgrade) upgrade(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(u.PGData, "global", "pg_control.old")); err == nil {
		return errors.New("an earlier pg_upgrade --link got past the point of no return; restore the backup taken before the upgrade")
	}
	next, old := u.paths()
	if err := os.RemoveAll(next); err != nil { // ours, from an interrupted attempt: holds no data yet
		return fmt.Errorf("remove an interrupted attempt: %w", err)
	}
	oldPG := u.manager(u.PGData, u.OldBin)
	newPG := u.manager(next, u.NewBin)
	u.Log.Info("upgrading the data directory", "member", u.Name, "from", u.From, "to", u.To)
	// pg_upgrade needs a cleanly shut down old cluster: recover it first.
	if err := oldPG.run(ctx, nil, "postgres", "--single", "-D", u.PGData, "template1"); err != nil {
		return fmt.Errorf("recover the old cluster: %w", err)
	}
	if err := newPG.initdb(ctx); err != nil {
		return err
	}
	if err := newPG.linkConfig(); err != nil {
		return err
	}
	work := filepath.Dir(u.PGData)
	args := []string{"--old-bindir", u.OldBin, "--new-bindir", u.NewBin,
		"--old-datadir", u.PGData, "--new-datadir", next, "--username", Superuser, "--link",
		// pg_upgrade's servers take no connections but its own, over the
		// socket: they need no certificates (the init container has none).
		"--old-options", "-c ssl=off", "--new-options", "-c ssl=off"}
	// --check first: it changes neither cluster, so an upgrade it refuses
	// (an extension missing from the new major, a data type it cannot
	// carry) leaves the old data directory as it was.
	if err := newPG.runIn(ctx, work, nil, "pg_upgrade", append(args, "--check")...); err != nil {
		if rmErr := os.RemoveAll(next); rmErr != nil {
			u.Log.Warn("could not remove the new data directory of a refused upgrade", "path", next, "err", rmErr.Error())
		}
		return fmt.Errorf("pg_upgrade --check refused the upgrade from %d to %d; the old data directory is unchanged: %w", u.From, u.To, err)
	}
	if err := newPG.runIn(ctx, work, nil, "pg_upgrade", args...); err != nil {
		return fmt.Errorf("pg_upgrade: %w", err)
	}
	if err := os.Rename(u.PGData, old); err != nil {
		return fmt.Errorf("keep the old data directory aside: %w", err)
	}
	if err := os.Rename(next, u.PGData); err != nil {
		return fmt.Errorf("move the upgraded data directory in place: %w", err)
	}
	if err := u.markAnalyze(); err != nil {
		return fmt.Errorf("ask for the statistics to be rebuilt: %w", err)
	}
	u.Log.Info("upgraded; the old data directory is kept aside", "member", u.Name, "kept_at", old)
	return nil
}

func (u *Upgrade) manager(pgdata, bin string) *Manager {
	return &Manager{Name: u.Name, PGData: pgdata, BinDir: bin, ConfigFile: u.ConfigFile,
		SuperuserPassword: u.SuperuserPassword, Credential: u.Credential, Log: u.Log}
}
