package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// runtimeOptions are cairn runtime's flags.
type runtimeOptions struct {
	kind, cluster, kubeconfig, metricsAddr string
	port                                   int
	failover                               agent.FailoverSettings
}

func newRuntime() *cobra.Command {
	var o runtimeOptions
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
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.kind, "kind", "", strings.Join(kindNames(), " or "))
	cmd.Flags().StringVar(&o.cluster, "cluster", "", "the cluster's name")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses the pod's service account")
	cmd.Flags().IntVar(&o.port, "postgres-port", contract.PostgresPort, "the members' PostgreSQL port")
	cmd.Flags().StringVar(&o.metricsAddr, "metrics-addr", ":9090", "where to serve Prometheus metrics (/metrics); empty serves none")
	cmd.Flags().DurationVar(&o.failover.After, "failover-after", 2*time.Second, "PostgreSQL: fail over from a primary that is down (refuses connections, pod or container gone) for this long")
	cmd.Flags().DurationVar(&o.failover.AfterTimeouts, "failover-after-timeouts", 10*time.Second, "PostgreSQL: fail over from a primary that only does not answer in time for this long")
	cmd.Flags().DurationVar(&o.failover.LeaseTTL, "lease-ttl", 30*time.Second, "PostgreSQL: the members' --lease-ttl; a fenced primary that does not answer is replaced only after it plus 3s")
	_ = cmd.MarkFlagRequired("kind")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

// run runs the runtime until a signal ends it.
func (o *runtimeOptions) run(cmd *cobra.Command) error {
	ns, id := os.Getenv(contract.EnvPodNamespace), os.Getenv(contract.EnvPodName)
	if ns == "" || id == "" {
		return &exitError{exitUsage, fmt.Errorf("cairn runtime: %s and %s must be set", contract.EnvPodNamespace, contract.EnvPodName)}
	}
	cfg, err := kubeConfig(o.kubeconfig)
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
	k, err := runtimeKind(o.kind)
	if err != nil {
		return err
	}
	if err := spec.CheckName(o.cluster); err != nil {
		return &exitError{exitUsage, fmt.Errorf("cairn runtime: --cluster: %w", err)}
	}
	a, reg, err := newRuntimeAgent(k, agent.Config{Cluster: o.cluster, Namespace: ns, Identity: id, PostgresPort: o.port,
		Log: log, Failover: o.failover}, client)
	if err != nil {
		return err
	}
	if o.metricsAddr != "" {
		l, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		defer serveMetrics(l, reg, log)()
	}
	return a.Run(ctx)
}

// runtimeKind is the row of the table of kinds that --kind names; any
// other name is a usage error that lists the kinds there are.
func runtimeKind(name string) (kind, error) {
	k, ok := kindNamed(name)
	if !ok {
		return kind{}, &exitError{exitUsage, fmt.Errorf("cairn runtime: --kind must be one of %s, not %q", strings.Join(kindNames(), ", "), name)}
	}
	return k, nil
}

// kindNames are the names of the table's kinds, in its order.
func kindNames() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	return names
}

// newRuntimeAgent is the runtime of cfg's cluster of kind k, with the
// registry its metrics are registered with: k's keeper's own and the
// backup ones.
func newRuntimeAgent(k kind, cfg agent.Config, client kubernetes.Interface) (*agent.Agent, *prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	a, err := agent.New(cfg, client, k.keeper)
	if err != nil {
		return nil, nil, err
	}
	return a, reg, nil
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
