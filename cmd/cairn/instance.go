package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-dev/cairn/runtime/instance"
)

// newInstance is the instance manager that runs in database pods. It is
// wired from the pod's environment (POD_NAME, POD_NAMESPACE, CAIRN_CLUSTER
// from the downward API and the rendered manifests).
func newInstance() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "instance",
		Short:  "Run inside a database pod: prepare the member and run the database",
		Hidden: true,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "install DEST",
		Short: "Copy this binary to DEST (an init container of every database pod)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(_ *cobra.Command, args []string) error { return instance.Install(args[0]) },
	}, newInstanceEtcd(), newInstancePostgres(), newInstancePgUpgrade())
	return cmd
}

type podEnv struct{ name, namespace, cluster string }

func readPodEnv() (podEnv, error) {
	e := podEnv{os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE"), os.Getenv("CAIRN_CLUSTER")}
	if e.name == "" || e.namespace == "" || e.cluster == "" {
		return e, &exitError{exitUsage, fmt.Errorf("cairn instance: POD_NAME, POD_NAMESPACE and CAIRN_CLUSTER must be set")}
	}
	return e, nil
}

// readPod reads the pod's environment and the mounted <cluster>-cairn
// ConfigMap in configDir.
func readPod(configDir string) (podEnv, instance.Config, error) {
	env, err := readPodEnv()
	if err != nil {
		return env, instance.Config{}, err
	}
	cfg, err := instance.ReadConfig(configDir)
	if err != nil {
		return env, cfg, &exitError{exitInvalid, err}
	}
	return env, cfg, nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}

func newInstanceEtcd() *cobra.Command {
	var dataDir, configDir, peerService string
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Start this pod's etcd member: from its data, by joining, or in a create step by bootstrapping",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, cfg, err := readPod(configDir)
			if err != nil {
				return err
			}
			host := func(m string) string { return fmt.Sprintf("%s.%s.%s.svc", m, peerService, env.namespace) }
			e := &instance.Etcd{
				Name: env.name, DataDir: dataDir, Config: cfg,
				PeerURL:         func(m string) string { return "http://" + host(m) + ":2380" },
				ClientURL:       func(m string) string { return "http://" + host(m) + ":2379" },
				ListenPeerURL:   "http://0.0.0.0:2380",
				ListenClientURL: "http://0.0.0.0:2379",
				Endpoints:       []string{fmt.Sprintf("http://%s-client.%s.svc:2379", env.cluster, env.namespace)},
				Log:             slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil)),
			}
			ctx, cancel := signalContext()
			defer cancel()
			return instance.RunEtcd(ctx, e)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "/var/lib/etcd/data", "etcd data directory")
	cmd.Flags().StringVar(&configDir, "config", "/etc/cairn", "mounted <cluster>-cairn ConfigMap")
	cmd.Flags().StringVar(&peerService, "peer-service", "", "headless Service giving members stable names (required)")
	_ = cmd.MarkFlagRequired("peer-service")
	return cmd
}

func newInstancePostgres() *cobra.Command {
	var configDir, pgConfig, primaryService, peerService string
	var confirmEvery, leaseTTL time.Duration
	cmd := &cobra.Command{
		Use:   "postgres",
		Short: "Start this pod's PostgreSQL member: initialise, clone, rewind or follow, then run it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, cfg, err := readPod(configDir)
			if err != nil {
				return err
			}
			super, repl := os.Getenv("POSTGRES_PASSWORD"), os.Getenv("CAIRN_REPLICATION_PASSWORD")
			if super == "" || repl == "" || os.Getenv("PGDATA") == "" {
				return &exitError{exitUsage, fmt.Errorf("cairn instance postgres: PGDATA, POSTGRES_PASSWORD and CAIRN_REPLICATION_PASSWORD must be set")}
			}
			p := &instance.Postgres{
				Name: env.name, PGData: os.Getenv("PGDATA"),
				ConfigFile: filepath.Join(pgConfig, "postgresql.conf"),
				Host:       "127.0.0.1", Port: 5432,
				Candidates: []string{
					fmt.Sprintf("%s.%s.svc:5432", primaryService, env.namespace),
					fmt.Sprintf("%s-0.%s.%s.svc:5432", env.cluster, peerService, env.namespace),
				},
				Peers:     instance.HeadlessPeers(fmt.Sprintf("%s.%s.svc", peerService, env.namespace), 5432),
				RoleLabel: instance.RoleLabelFile("/etc/podinfo/labels"),
				Config:    cfg, SuperuserPassword: super, ReplicationPassword: repl,
				ConfirmEvery: confirmEvery, LeaseTTL: leaseTTL,
				Log: slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil)),
			}
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
			p.Confirm = instance.APIRoleLabel(client, env.namespace, env.name)
			ctx, cancel := signalContext()
			defer cancel()
			return instance.RunPostgres(ctx, p, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&configDir, "config", "/etc/cairn", "mounted <cluster>-cairn ConfigMap")
	f.StringVar(&pgConfig, "pg-config", "/etc/postgresql-cairn", "mounted <cluster>-config ConfigMap (postgresql.conf, pg_hba.conf)")
	f.StringVar(&primaryService, "primary-service", "", "the <cluster>-rw Service (required)")
	f.StringVar(&peerService, "peer-service", "", "the headless Service giving members stable names (required)")
	f.DurationVar(&confirmEvery, "confirm-every", 500*time.Millisecond, "how often a primary confirms its role label through the API server")
	f.DurationVar(&leaseTTL, "lease-ttl", 30*time.Second, "a primary that cannot confirm its role label for this long stops itself (the runtime's --lease-ttl)")
	_ = cmd.MarkFlagRequired("primary-service")
	_ = cmd.MarkFlagRequired("peer-service")
	return cmd
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
			u := &instance.PgUpgrade{
				Name: env.name, PGData: os.Getenv("PGDATA"), From: from, To: to,
				OldBin:            fmt.Sprintf("/usr/lib/postgresql/%d/bin", from),
				NewBin:            fmt.Sprintf("/usr/lib/postgresql/%d/bin", to),
				ConfigFile:        filepath.Join(pgConfig, "postgresql.conf"),
				SuperuserPassword: os.Getenv("POSTGRES_PASSWORD"),
				Log:               slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil)),
			}
			ctx, cancel := signalContext()
			defer cancel()
			return u.Run(ctx)
		},
	}
	cmd.Flags().IntVar(&from, "from", 0, "PostgreSQL major the data directory is on")
	cmd.Flags().IntVar(&to, "to", 0, "PostgreSQL major to upgrade to")
	cmd.Flags().StringVar(&pgConfig, "pg-config", "/etc/postgresql-cairn", "mounted <cluster>-config ConfigMap")
	return cmd
}
