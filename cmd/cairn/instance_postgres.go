package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
	"github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/runtime/wal"
)

// instancePostgres is the PostgreSQL row's `cairn instance` subcommands:
// the member, the pg_upgrade init container of a major upgrade and its
// pre-flight check.
func instancePostgres() []*cobra.Command {
	return []*cobra.Command{newInstancePostgres(), newInstancePgUpgrade(), newInstancePgUpgradeCheck(), newInstanceWAL()}
}

// newInstanceWAL is archive_command and restore_command: a client of the
// member's instance manager, which archives and fetches WAL for it
// (runtime/instance/postgres/walserver.go). It exits as PostgreSQL reads those
// commands: 0 done, 1 not archived, 255 failed.
func newInstanceWAL() *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "wal push|fetch WALFILE PATH",
		Short: "archive_command and restore_command: archive or fetch one WAL file through the instance manager",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			code, err := wal.Client(ctx, socket, args[0], args[1], args[2])
			if err != nil {
				return &exitError{code, fmt.Errorf("cairn instance wal %s %s: %w", args[0], args[1], err)}
			}
			if code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&socket, "socket", contract.PostgresWALSocket, "the instance manager's WAL socket")
	return cmd
}

// pgFlags are the flags of `cairn instance postgres`.
type pgFlags struct {
	configDir, pgConfig, primaryService, peerService string
	confirmEvery, leaseTTL                           time.Duration
}

func newInstancePostgres() *cobra.Command {
	var fl pgFlags
	cmd := &cobra.Command{
		Use:   "postgres",
		Short: "Start this pod's PostgreSQL member: initialise, clone, rewind or follow, then run it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, cfg, err := readPod(fl.configDir, postgres.ReadConfig)
			if err != nil {
				return err
			}
			super, repl := os.Getenv(contract.EnvSuperuserPassword), os.Getenv(contract.EnvReplicationPassword)
			if super == "" || repl == "" || os.Getenv(contract.EnvPGData) == "" {
				return &exitError{exitUsage, fmt.Errorf("cairn instance postgres: %s, %s and %s must be set", contract.EnvPGData, contract.EnvSuperuserPassword, contract.EnvReplicationPassword)}
			}
			p := postgresInPod(env, cfg, fl, instanceLog(cmd.ErrOrStderr()))
			p.SuperuserPassword, p.ReplicationPassword = super, repl
			// The pod's ServiceAccount (<cluster>-member) may get its own
			// pod: a primary confirms its role label through it.
			kc, err := rest.InClusterConfig()
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("cairn instance postgres: the pod's service account: %w", err)}
			}
			client, err := kubernetes.NewForConfig(kc)
			if err != nil {
				return err
			}
			p.Confirm = postgres.APIRoleLabel(client, env.namespace, env.name)
			// and record a clean stop of its primary for the runtime.
			p.Stops = postgres.APICleanStops(client, env.namespace, env.cluster)
			// and get the certificate Secrets the runtime keeps.
			p.Certs = &certs.Files{Client: client, Namespace: env.namespace, Cluster: env.cluster, Dir: p.TLSDir, Uid: -1, Gid: -1}
			ctx, cancel := signalContext()
			defer cancel()
			return postgres.Run(ctx, p, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.configDir, "config", contract.ConfigDir, "mounted <cluster>-cairn ConfigMap")
	f.StringVar(&fl.pgConfig, "pg-config", contract.PostgresConfigDir, "mounted <cluster>-config ConfigMap (postgresql.conf, pg_hba.conf)")
	f.StringVar(&fl.primaryService, "primary-service", "", "the <cluster>-rw Service (required)")
	f.StringVar(&fl.peerService, "peer-service", "", "the headless Service giving members stable names (required)")
	f.DurationVar(&fl.confirmEvery, "confirm-every", 0, "how often a primary confirms its role label through the API server (0: a quarter of --lease-ttl); the runtime nudges one it sees labelled away to confirm at once")
	f.DurationVar(&fl.leaseTTL, "lease-ttl", contract.PostgresLeaseTTL, "a primary that can neither confirm its role label nor count every other member following it for this long stops itself (the runtime's --lease-ttl)")
	_ = cmd.MarkFlagRequired("primary-service")
	_ = cmd.MarkFlagRequired("peer-service")
	return cmd
}

// postgresInPod is the instance manager of the pod's PostgreSQL member,
// without its passwords and API server confirmation: it looks for the
// primary behind the primary Service, then at member 0, and checks every
// member behind the headless peer Service before it would be primary.
func postgresInPod(env podEnv, cfg postgres.Config, fl pgFlags, log *slog.Logger) *postgres.Manager {
	port := ":" + strconv.Itoa(contract.PostgresPort)
	return &postgres.Manager{
		Name: env.name, PGData: os.Getenv(contract.EnvPGData),
		ConfigFile: filepath.Join(fl.pgConfig, contract.PostgresConfFile),
		Host:       "127.0.0.1", Port: contract.PostgresPort,
		Candidates: []string{
			fmt.Sprintf("%s.%s.svc%s", fl.primaryService, env.namespace, port),
			fmt.Sprintf("%s.%s.%s.svc%s", contract.MemberName(env.cluster, 0), fl.peerService, env.namespace, port),
		},
		Peers:     postgres.HeadlessPeers(fmt.Sprintf("%s.%s.svc", fl.peerService, env.namespace), contract.PostgresPort),
		RoleLabel: postgres.RoleLabelFile(contract.PodInfoLabels),
		Config:    cfg,
		Namespace: env.namespace, TLSDir: contract.PostgresTLSDir, TLSMode: postgres.TLSModeFile(fl.configDir),
		ConfirmEvery: fl.confirmEvery, LeaseTTL: fl.leaseTTL,
		Log:     log,
		Cluster: env.cluster, WALSocket: contract.PostgresWALSocket, WALCommand: contract.PostgresWALCommand,
	}
}

func newInstancePgUpgrade() *cobra.Command {
	var from, to int
	var pgConfig string
	cmd := &cobra.Command{
		Use:   "pg-upgrade --from MAJOR --to MAJOR",
		Short: "In the pg_upgrade init container: upgrade member 0's data directory if it is still on --from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := readPodEnv()
			if err != nil {
				return err
			}
			if from <= 0 || to <= from {
				return &exitError{exitUsage, fmt.Errorf("cairn instance pg-upgrade: --to (%d) must be a later major than --from (%d)", to, from)}
			}
			u := &postgres.Upgrade{
				Name: env.name, PGData: os.Getenv(contract.EnvPGData), From: from, To: to,
				OldBin:            fmt.Sprintf("/usr/lib/postgresql/%d/bin", from),
				NewBin:            fmt.Sprintf("/usr/lib/postgresql/%d/bin", to),
				ConfigFile:        filepath.Join(pgConfig, contract.PostgresConfFile),
				SuperuserPassword: os.Getenv(contract.EnvSuperuserPassword),
				Log:               instanceLog(cmd.ErrOrStderr()),
			}
			ctx, cancel := signalContext()
			defer cancel()
			return u.Run(ctx)
		},
	}
	cmd.Flags().IntVar(&from, "from", 0, "PostgreSQL major the data directory is on")
	cmd.Flags().IntVar(&to, "to", 0, "PostgreSQL major to upgrade to")
	cmd.Flags().StringVar(&pgConfig, "pg-config", contract.PostgresConfigDir, "mounted <cluster>-config ConfigMap")
	return cmd
}
