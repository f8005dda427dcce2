package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance/postgres"
)

// newInstancePgUpgradeCheck is the pre-flight step's Job: pg_upgrade
// --check on the cluster's newest base backup, restored into a scratch
// folder (runtime/instance/postgres/upgradecheck.go). A refusal exits 1 with
// pg_upgrade's findings as the container's termination message, which
// observe reads into the live state and the next step's gate shows.
func newInstancePgUpgradeCheck() *cobra.Command {
	var from, to int
	var pgConfig, location, backupID, work, termination string
	cmd := &cobra.Command{
		Use:   "pg-upgrade-check --from MAJOR --to MAJOR --location URL",
		Short: "In the pre-flight Job of a major upgrade: run pg_upgrade --check on the newest base backup, never on a member",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := readPodEnv()
			if err != nil {
				return err
			}
			if from <= 0 || to <= from || location == "" {
				return &exitError{exitUsage, fmt.Errorf("cairn instance pg-upgrade-check: --location must be set and --to (%d) a later major than --from (%d)", to, from)}
			}
			c := &postgres.UpgradeCheck{
				Cluster: env.cluster, Location: location, Backup: backupID, From: from, To: to,
				OldBin:     fmt.Sprintf("/usr/lib/postgresql/%d/bin", from),
				NewBin:     fmt.Sprintf("/usr/lib/postgresql/%d/bin", to),
				Work:       work,
				ConfigFile: filepath.Join(pgConfig, contract.PostgresConfFile),
				Log:        instanceLog(cmd.ErrOrStderr()),
			}
			ctx, cancel := signalContext()
			defer cancel()
			err = c.Run(ctx)
			if err != nil {
				writeTermination(termination, err)
			}
			if errors.Is(err, postgres.ErrUpgradeRefused) {
				return &exitError{exitInvalid, err}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&from, "from", 0, "PostgreSQL major the cluster runs")
	f.IntVar(&to, "to", 0, "PostgreSQL major the upgrade goes to")
	f.StringVar(&location, "location", "", "the backup policy's storage location (s3://... or file://...)")
	f.StringVar(&backupID, "backup", contract.RestoreLatest, "the backup to check: an ID, or latest")
	f.StringVar(&pgConfig, "pg-config", contract.PostgresConfigDir, "mounted <cluster>-config ConfigMap")
	f.StringVar(&work, "work", contract.PGUpgradeCheckWorkDir, "scratch folder for the restored copy and the new cluster")
	f.StringVar(&termination, "termination-log", "/dev/termination-log", "where the refusal is written for Kubernetes to report; empty writes none")
	return cmd
}

// writeTermination writes err as the container's termination message,
// within the 4096 bytes Kubernetes keeps. A failure to write it is not
// the check's: the error still reaches the log.
func writeTermination(path string, err error) {
	if path == "" {
		return
	}
	msg := err.Error()
	if len(msg) > contract.TerminationMessageMax {
		msg = msg[:contract.TerminationMessageMax]
	}
	_ = os.WriteFile(path, []byte(msg), 0o644)
}
