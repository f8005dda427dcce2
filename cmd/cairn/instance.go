package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// newInstance is the instance manager that runs in database pods: one
// subcommand (or more) per kind of the kinds table, each wired from the
// pod's environment (POD_NAME, POD_NAMESPACE, CAIRN_CLUSTER from the
// downward API and the rendered manifests) and its flags.
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
	})
	for _, k := range kinds {
		if k.instance != nil {
			cmd.AddCommand(k.instance()...)
		}
	}
	return cmd
}

// instanceCommands is one kind's instance manager, the seam of the kinds
// table: its `cairn instance` subcommands (instance_<kind>.go), each of
// which builds the kind's manager from the pod and runs it.
type instanceCommands func() []*cobra.Command

// podEnv is the pod an instance manager runs in.
type podEnv struct{ name, namespace, cluster string }

func readPodEnv() (podEnv, error) {
	e := podEnv{os.Getenv(contract.EnvPodName), os.Getenv(contract.EnvPodNamespace), os.Getenv(contract.EnvCluster)}
	if e.name == "" || e.namespace == "" || e.cluster == "" {
		return e, &exitError{exitUsage, fmt.Errorf("cairn instance: %s, %s and %s must be set", contract.EnvPodName, contract.EnvPodNamespace, contract.EnvCluster)}
	}
	return e, nil
}

// readPod reads the pod's environment and, with the kind's read, the
// mounted <cluster>-cairn ConfigMap in configDir.
func readPod[C any](configDir string, read func(dir string) (C, error)) (podEnv, C, error) {
	var cfg C
	env, err := readPodEnv()
	if err != nil {
		return env, cfg, err
	}
	if cfg, err = read(configDir); err != nil {
		return env, cfg, &exitError{exitInvalid, err}
	}
	return env, cfg, nil
}

// instanceLog is an instance manager's logger: JSON lines on w (the
// command's standard error).
func instanceLog(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}
