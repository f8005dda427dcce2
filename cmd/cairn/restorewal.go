package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/wal"
)

// A by-hand point-in-time restore (cairn restore --target-time): the base
// backup is unpacked as for any restore, and the data directory is left
// ready to replay the archived WAL when PostgreSQL starts on it, with
// `cairn backup wal-fetch` as its restore_command. The chain is checked
// before anything is unpacked (backup.PlanRecovery).

// safeArg is what a location or a path may hold to be written into a
// restore_command, which PostgreSQL runs through the shell and reads from
// a quoted postgresql.conf value: nothing that quotes or expands.
var safeArg = regexp.MustCompile(`^[A-Za-z0-9/._:@+=,-]+$`)

// planTarget checks the WAL chain from m to target (an RFC 3339 time or
// latest) before the restore unpacks anything.
func planTarget(ctx context.Context, st backup.Store, m backup.Manifest, target string) (backup.RecoveryPath, error) {
	t, err := backup.ParseTarget(target)
	if err != nil {
		return backup.RecoveryPath{}, &exitError{exitUsage, fmt.Errorf("cairn restore: --target-time %w", err)}
	}
	return backup.PlanRecovery(ctx, st, m, t)
}

// writeRecovery leaves the restored copy in dir to recover to o.target
// when it starts: a recovery.signal, and the recovery settings in
// postgresql.auto.conf.
func writeRecovery(dir string, o restoreOptions, m backup.Manifest) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, a := range []string{self, o.location} {
		if !safeArg.MatchString(a) {
			return fmt.Errorf("cairn restore: %q cannot be written into a restore_command (it holds a quote, a space or a shell character)", a)
		}
	}
	cmd := fmt.Sprintf("%s backup wal-fetch --location %s --cluster %s --system %s %%f %%p", self, o.location, m.Cluster, m.Postgres.SystemID)
	t, err := backup.ParseTarget(o.target)
	if err != nil {
		return err
	}
	rs := backup.RecoverySettings(cmd, t)
	settings := "\n# cairn restore --target-time " + o.target + "\n"
	for _, k := range slices.Sorted(maps.Keys(rs)) {
		settings += k + " = '" + rs[k] + "'\n"
	}
	f, err := os.OpenFile(filepath.Join(dir, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(settings); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, s := range []string{"standby.signal", "postmaster.pid"} {
		if err := os.Remove(filepath.Join(dir, s)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "recovery.signal"), nil, 0o600)
}

func newBackupWALFetch() *cobra.Command {
	var location, cluster, system string
	cmd := &cobra.Command{
		Use:   "wal-fetch --location URL --cluster NAME --system ID WALFILE PATH",
		Short: "restore_command of a by-hand point-in-time restore: fetch one archived WAL file",
		Long: `Fetch one WAL file of --cluster's system --system from --location into PATH,
as the restore_command cairn restore --target-time writes. It exits as
PostgreSQL reads a restore_command: 0 fetched, 1 not archived, 255 any
other failure (a damaged copy, the store unreachable), which stops the
recovery rather than let it end early.`,
		Example: `  # as the restore_command cairn restore --target-time writes into postgresql.auto.conf
  restore_command = '/usr/local/bin/cairn backup wal-fetch --location s3://my-backup-bucket/postgres --cluster my-production-db --system 7441712483402028686 %f %p'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseUint(system, 10, 64)
			if err != nil {
				return &exitError{wal.ExitFailed, fmt.Errorf("cairn backup wal-fetch: --system %q is not a system identifier", system)}
			}
			st, err := backup.OpenFromEnv(location)
			if err != nil {
				return &exitError{wal.ExitFailed, err}
			}
			err = backup.WALArchive{Store: st, Cluster: cluster, System: id}.Fetch(cmd.Context(), args[0], args[1])
			switch {
			case errors.Is(err, backup.ErrNotFound):
				return &exitError{code: wal.ExitMissing}
			case err != nil:
				return &exitError{wal.ExitFailed, err}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&location, "location", "", "the backups' storageLocation (required)")
	f.StringVar(&cluster, "cluster", "", "the cluster the WAL is of (required)")
	f.StringVar(&system, "system", "", "the system identifier the backup's manifest records (required)")
	for _, r := range []string{"location", "cluster", "system"} {
		_ = cmd.MarkFlagRequired(r)
	}
	return cmd
}
