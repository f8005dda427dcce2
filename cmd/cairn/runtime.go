package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
)

func newRuntime() *cobra.Command {
	var kind, cluster, kubeconfig, metricsAddr string
	var port int
	var failover agent.FailoverSettings
	cmd := &cobra.Command{
		Use:   "runtime --kind KIND --cluster NAME",
		Short: "Run the in-cluster runtime of one cluster (the rendered <cluster>-runtime Deployment)",
		Long: `Take part in the runtime's leader election on the Lease <cluster>-runtime
and, while leading, keep the cluster's runtime-owned state true: the
PostgreSQL role labels the -rw and -ro Services select on, failover from a
dead primary (fenced first, the replica with the most WAL promoted),
merged switchover steps and synchronous_standby_names; for etcd, the
promotion of caught-up learners, the removal of members merged scale-in
steps ask for (leadership moved away first), the replacement of members
whose volume claim was replaced, and the membership status the planner
reads; and the cluster's scheduled and requested backups (docs/backups.md),
with Events and Prometheus metrics on --metrics-addr.`,
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
			if err := spec.CheckName(cluster); err != nil {
				return &exitError{exitUsage, fmt.Errorf("cairn runtime: --cluster: %w", err)}
			}
			reg := prometheus.NewRegistry()
			metrics, err := agent.NewMetrics(reg, cluster)
			if err != nil {
				return err
			}
			pgMetrics, err := agent.NewPostgresMetrics(reg, cluster)
			if err != nil {
				return err
			}
			backupMetrics, err := agent.NewBackupMetrics(reg, cluster)
			if err != nil {
				return err
			}
			if metricsAddr != "" {
				l, err := net.Listen("tcp", metricsAddr)
				if err != nil {
					return fmt.Errorf("metrics listener: %w", err)
				}
				defer serveMetrics(l, reg, log)()
			}
			a := agent.New(agent.Config{Cluster: cluster, Namespace: ns, Identity: id, PostgresPort: port, Log: log,
				Postgres: kind == spec.PostgresKind, Metrics: metrics, PostgresMetrics: pgMetrics, BackupMetrics: backupMetrics, Failover: failover,
				EtcdEndpoints: []string{fmt.Sprintf("http://%s-client.%s.svc:2379", cluster, ns)}}, client)
			return a.Run(ctx)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "EtcdCluster or PostgresCluster")
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster's name")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses the pod's service account")
	cmd.Flags().IntVar(&port, "postgres-port", 5432, "the members' PostgreSQL port")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", ":9090", "where to serve Prometheus metrics (/metrics); empty serves none")
	cmd.Flags().DurationVar(&failover.After, "failover-after", 2*time.Second, "PostgreSQL: fail over from a primary that is down (refuses connections, pod or container gone) for this long")
	cmd.Flags().DurationVar(&failover.AfterTimeouts, "failover-after-timeouts", 10*time.Second, "PostgreSQL: fail over from a primary that only does not answer in time for this long")
	cmd.Flags().DurationVar(&failover.LeaseTTL, "lease-ttl", 30*time.Second, "PostgreSQL: the members' --lease-ttl; a fenced primary that does not answer is replaced only after it plus 3s")
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

// serveMetrics serves the registry's metrics at /metrics on l until the
// returned stop is called.
func serveMetrics(l net.Listener, reg *prometheus.Registry, log *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err.Error())
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
