package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

type observeOptions struct {
	repo, output string
	specs        specsFlag
	src          liveSource
}

func newObserve() *cobra.Command {
	var o observeOptions
	cmd := &cobra.Command{
		Use:   "observe --repo DIR [--kubeconfig FILE [--context NAME] | --in-cluster] [-o yaml|json]",
		Short: "Write the observed state of every cluster of a GitOps repo, in the format --live reads",
		Long: `Read what runs for every cluster whose spec is under --specs, through
client-go (StatefulSets, pods, claims, the rendered config and the
runtime's status), and write it in the observed-state format of
docs/live-state.md. The output replays with --live: a plan made from it is
the plan made against the cluster.

The cluster is found as kubectl finds it: --kubeconfig, $KUBECONFIG,
~/.kube/config, then the pod's ServiceAccount (docs/cli.md).`,
		Example: `  # record what runs, then plan against the recording
  cairn observe --repo . --kubeconfig ~/.kube/prod --namespace databases > live.yaml
  cairn plan --repo . --live live.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runObserve(cmd.Context(), cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "GitOps repo directory (required)")
	o.specs.add(f)
	f.StringVarP(&o.output, "output", "o", "yaml", "output format: yaml or json")
	o.src.flags(f)
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

func runObserve(ctx context.Context, w io.Writer, o observeOptions) error {
	if o.output != "yaml" && o.output != "json" {
		return &exitError{exitUsage, fmt.Errorf("cairn observe: -o must be yaml or json, got %q", o.output)}
	}
	if o.src.file != "" {
		return &exitError{exitUsage, fmt.Errorf("cairn observe: --live is what observe writes; read a cluster with --kubeconfig or --in-cluster")}
	}
	clusters, err := specKinds().LoadRepo(o.repo, o.specs.layout(""))
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	snap, err := o.src.readAny(ctx, clusters)
	if err != nil {
		return err
	}
	out, err := encodeSnapshot(snap, o.output)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// encodeSnapshot writes a snapshot in the observed-state format.
func encodeSnapshot(s *live.Snapshot, format string) ([]byte, error) {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode observed state: %w", err)
	}
	if format == "json" {
		return append(data, '\n'), nil
	}
	y, err := yaml.JSONToYAML(data)
	if err != nil {
		return nil, fmt.Errorf("encode observed state: %w", err)
	}
	return y, nil
}

// podNamespace is the namespace of the pod cairn runs in.
func podNamespace() string {
	if ns := os.Getenv(contract.EnvPodNamespace); ns != "" {
		return ns
	}
	data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return "default"
	}
	return strings.TrimSpace(string(data))
}
