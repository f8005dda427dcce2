package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance/etcd"
)

// instanceEtcd is the etcd row's `cairn instance` subcommand.
func instanceEtcd() []*cobra.Command { return []*cobra.Command{newInstanceEtcd()} }

func newInstanceEtcd() *cobra.Command {
	var dataDir, configDir, peerService string
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Start this pod's etcd member: from its data, by joining, or in a create step by bootstrapping",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, cfg, err := readPod(configDir, etcd.ReadConfig)
			if err != nil {
				return err
			}
			e := etcdInPod(env, cfg, dataDir, peerService, instanceLog(cmd.ErrOrStderr()))
			e.ConfigDir = configDir
			ctx, cancel := signalContext()
			defer cancel()
			err = etcd.Run(ctx, e)
			// With TLS on etcd runs as a child: the pod's process ends
			// with its status, as it would were it etcd itself.
			var ee *etcd.ExitError
			if errors.As(err, &ee) {
				return &exitError{code: ee.Code, err: err}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "/var/lib/etcd/data", "etcd data directory")
	cmd.Flags().StringVar(&configDir, "config", contract.ConfigDir, "mounted <cluster>-cairn ConfigMap")
	cmd.Flags().StringVar(&peerService, "peer-service", "", "headless Service giving members stable names (required)")
	_ = cmd.MarkFlagRequired("peer-service")
	return cmd
}

// etcdInPod is the instance manager of the pod's etcd member: members
// are named through the headless peerService and the cluster is reached
// through its client Service.
func etcdInPod(env podEnv, cfg etcd.Config, dataDir, peerService string, log *slog.Logger) *etcd.Manager {
	host := func(m string) string { return fmt.Sprintf("%s.%s.%s.svc", m, peerService, env.namespace) }
	peer, client := ":"+strconv.Itoa(contract.EtcdPeerPort), ":"+strconv.Itoa(contract.EtcdClientPort)
	cs, ps := etcd.Schemes(cfg.TLS)
	return &etcd.Manager{
		Name: env.name, DataDir: dataDir, Config: cfg,
		PeerURL:          func(m string) string { return ps + "://" + host(m) + peer },
		ClientURL:        func(m string) string { return cs + "://" + host(m) + client },
		ListenPeerURL:    ps + "://0.0.0.0" + peer,
		ListenClientURL:  cs + "://0.0.0.0" + client,
		ListenMetricsURL: "http://0.0.0.0:" + strconv.Itoa(contract.EtcdMetricsPort),
		TLSDir:           contract.EtcdTLSDir,
		Endpoints:        []string{fmt.Sprintf("%s://%s.%s.svc%s", cs, contract.EtcdClientService(env.cluster), env.namespace, client)},
		Log:              log,
	}
}
