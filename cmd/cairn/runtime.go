package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
)

func newRuntime() *cobra.Command {
	var kind, cluster, kubeconfig string
	var port int
	cmd := &cobra.Command{
		Use:   "runtime --kind KIND --cluster NAME",
		Short: "Run the in-cluster runtime of one cluster (the rendered <cluster>-runtime Deployment)",
		Long: `Take part in the runtime's leader election on the Lease <cluster>-runtime
and, while leading, keep the cluster's runtime-owned state true: the
PostgreSQL role labels the -rw and -ro Services select on, and the
promotion of caught-up etcd learners. Failover, switchover, planned etcd
member removal, dead-member replacement and backups are being built on it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, id := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME")
			if ns == "" || id == "" {
				return &exitError{exitUsage, fmt.Errorf("cairn runtime: POD_NAMESPACE and POD_NAME must be set")}
			}
			cfg, err := kubeConfig(kubeconfig)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
			klog.SetSlogLogger(log) // client-go's leader election logs through slog too
			ctx, cancel := signalContext()
			defer cancel()
			if kind != spec.PostgresKind && kind != spec.EtcdKind {
				return &exitError{exitUsage, fmt.Errorf("cairn runtime: --kind must be %s or %s", spec.PostgresKind, spec.EtcdKind)}
			}
			a := agent.New(agent.Config{Cluster: cluster, Namespace: ns, Identity: id, PostgresPort: port, Log: log,
				Postgres:      kind == spec.PostgresKind,
				EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.%s.svc:2379", cluster, ns)}}, client)
			return a.Run(ctx)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "EtcdCluster or PostgresCluster")
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster's name")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses the pod's service account")
	cmd.Flags().IntVar(&port, "postgres-port", 5432, "the members' PostgreSQL port")
	_ = cmd.MarkFlagRequired("kind")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

func kubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", path)
}
