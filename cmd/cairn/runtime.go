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
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/pki"
	"github.com/cairn-dev/cairn/version"
)

// runtimeOptions are cairn runtime's flags: those every kind shares, and
// each kind's own in its kindRuntime.
type runtimeOptions struct {
	kind, cluster, kubeconfig, metricsAddr string
	certLifetime, leaderLease              time.Duration
	// kinds are the table's kinds' runtimes, by name, their flags
	// registered on the command.
	kinds map[string]kindRuntime
}

// kindRuntime is one kind's part of `cairn runtime`, the seam of the
// kinds table (runtime_<kind>.go): the kind's own flags and its keeper.
type kindRuntime interface {
	// addFlags registers the kind's flags on f, bound to the kind's
	// config; no two kinds' flags share a name.
	addFlags(f *pflag.FlagSet)
	// keeper builds the kind's keeper of cfg's cluster from the flags'
	// values: an agent.KeeperFactory.
	keeper(client kubernetes.Interface, cfg agent.Config) (agent.Keeper, error)
}

func newRuntime() *cobra.Command {
	o := runtimeOptions{kinds: map[string]kindRuntime{}}
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
with Events and Prometheus metrics on --metrics-addr (docs/metrics.md):
the replica that leads exports what it observed, the others only
cairn_runtime_leader 0 and their counters.

It runs in the cluster, as the rendered Deployment runs it, with
POD_NAMESPACE and POD_NAME set from the downward API.`,
		Example: `  # the runtime of a PostgreSQL cluster, as its rendered Deployment runs it
  cairn runtime --kind PostgresCluster --cluster my-production-db

  # an etcd cluster's runtime from a workstation, metrics on :9191
  POD_NAMESPACE=db POD_NAME=$(hostname) cairn runtime --kind EtcdCluster \
    --cluster my-etcd-cluster --kubeconfig ~/.kube/config --metrics-addr :9191`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.kind, "kind", "", strings.Join(runtimeKindNames(), " or "))
	cmd.Flags().StringVar(&o.cluster, "cluster", "", "the cluster's name")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses the pod's service account")
	cmd.Flags().StringVar(&o.metricsAddr, "metrics-addr", ":9090", "where to serve Prometheus metrics (/metrics); empty serves none")
	cmd.Flags().DurationVar(&o.certLifetime, "cert-lifetime", pki.LeafLifetime, "with TLS on: the lifetime of the certificates the runtime issues; it renews them past two thirds of it")
	cmd.Flags().DurationVar(&o.leaderLease, "leader-lease", agent.DefaultLeaderLease, fmt.Sprintf("how long the leader's Lease lasts unrenewed: a lost leader is replaced within it (at least %s)", agent.MinLeaderLease))
	for _, k := range kinds {
		if k.runtime == nil {
			continue // a row without a runtime: --kind refuses it
		}
		o.kinds[k.name] = k.runtime()
		o.kinds[k.name].addFlags(cmd.Flags())
	}
	_ = cmd.MarkFlagRequired("kind")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

// run runs the runtime until a signal ends it, then returns nil.
func (o *runtimeOptions) run(cmd *cobra.Command) error {
	if o.leaderLease < agent.MinLeaderLease {
		return &exitError{exitUsage, fmt.Errorf("cairn runtime: --leader-lease %s: at least %s", o.leaderLease, agent.MinLeaderLease)}
	}
	ns, id := os.Getenv(contract.EnvPodNamespace), os.Getenv(contract.EnvPodName)
	if ns == "" || id == "" {
		return &exitError{exitUsage, fmt.Errorf("cairn runtime: %s and %s must be set", contract.EnvPodNamespace, contract.EnvPodName)}
	}
	// In the cluster by default; --kubeconfig for a runtime run by hand.
	kt, err := resolveKube(o.kubeconfig, "", o.kubeconfig == "")
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(kt.Config)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
	klog.SetSlogLogger(log) // client-go's leader election logs through slog too
	ctx := cmd.Context()    // ends on SIGINT or SIGTERM (run in main.go)
	k, err := runtimeKind(o.kind)
	if err != nil {
		return err
	}
	if err := spec.CheckName(o.cluster); err != nil {
		return &exitError{exitUsage, fmt.Errorf("cairn runtime: --cluster: %w", err)}
	}
	a, reg, err := newRuntimeAgent(k, o.kinds[k.name], agent.Config{Cluster: o.cluster, Namespace: ns, Identity: id,
		Log: log, CertLifetime: o.certLifetime, LeaderLease: o.leaderLease}, client)
	if err != nil {
		return err
	}
	if o.metricsAddr != "" {
		l, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		defer serveHTTP(l, metricsHandler(reg), log)()
	}
	return a.Run(ctx)
}

// runtimeKind is the row of the table of kinds that --kind names, when
// it has a runtime; any other name is a usage error that lists the kinds
// with one.
func runtimeKind(name string) (kind, error) {
	k, ok := kindNamed(name)
	if !ok || k.runtime == nil {
		return kind{}, &exitError{exitUsage, fmt.Errorf("cairn runtime: --kind must be one of %s, not %q", strings.Join(runtimeKindNames(), ", "), name)}
	}
	return k, nil
}

// runtimeKindNames are the names of the table's kinds with a runtime, in
// its order.
func runtimeKindNames() []string {
	var names []string
	for _, k := range kinds {
		if k.runtime != nil {
			names = append(names, k.name)
		}
	}
	return names
}

// newRuntimeAgent is the runtime of cfg's cluster of kind k, its keeper
// built by rt, with the registry its metrics are registered with: the
// process's (newProcessRegistry), cairn_runtime_leader, k's keeper's own
// and the backup ones.
func newRuntimeAgent(k kind, rt kindRuntime, cfg agent.Config, client kubernetes.Interface) (*agent.Agent, *prometheus.Registry, error) {
	reg, err := newProcessRegistry()
	if err != nil {
		return nil, nil, err
	}
	cfg.Metrics, cfg.Kind = reg, k.name
	a, err := agent.New(cfg, client, rt.keeper)
	if err != nil {
		return nil, nil, err
	}
	return a, reg, nil
}

// newProcessRegistry is a registry holding what every long-running cairn
// process exports: cairn_build_info{release,revision,goversion} 1 and the
// Go and process collectors' go_* and process_* families.
func newProcessRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	v := version.Get()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_build_info", Help: "1, labelled with the release, commit and Go toolchain of this build.",
		ConstLabels: prometheus.Labels{"release": v.Release, "revision": v.Revision, "goversion": v.GoVersion}})
	build.Set(1)
	for _, c := range []prometheus.Collector{build, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// metricsHandler serves reg's metrics at /metrics.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

// serveHTTP serves h on l until the returned stop is called.
func serveHTTP(l net.Listener, h http.Handler, log *slog.Logger) (stop func()) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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
