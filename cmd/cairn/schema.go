package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func newSchema() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "schema [KIND] [--out DIR]",
		Short: "Print or write the JSON Schemas of the spec kinds",
		Long: `Print the JSON Schema of one spec kind (PostgresCluster or EtcdCluster), or
with --out write each kind's (or the one named) into DIR, at a path that
changes only with the apiVersion:

  DIR/db.example.com/postgrescluster_v1alpha1.json
  DIR/etcd.database.coreos.com/etcdcluster_v1beta2.json

Run it at the root of your GitOps repo (cairn schema --out schemas) and
name the schema on the first line of each spec, relative to the spec:

  # yaml-language-server: $schema=../../schemas/db.example.com/postgrescluster_v1alpha1.json

The schemas check what cairn validate checks, but for the few rules
docs/spec-reference.md lists. The committed copies live in docs/schemas/.`,
		Example: `  # the schema of one kind, for an editor
  cairn schema PostgresCluster > postgrescluster.json

  # every kind's schema into the GitOps repo, at the paths the modeline names
  cairn schema --out schemas`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kinds := specKinds().Names()
			if len(args) == 1 {
				kinds = []string{args[0]}
			}
			if out == "" && len(kinds) != 1 {
				return &exitError{exitUsage, fmt.Errorf("cairn schema: name a kind (%s) or give --out DIR", strings.Join(specKinds().Names(), ", "))}
			}
			for _, k := range kinds {
				data, err := specKinds().Schema(k)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				if out == "" {
					_, err = cmd.OutOrStdout().Write(data)
					return err
				}
				rel, _ := specKinds().SchemaPath(k)
				path := filepath.Join(out, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return &exitError{exitInvalid, fmt.Errorf("write schema: %w", err)}
				}
				if err := os.WriteFile(path, data, 0o644); err != nil {
					return &exitError{exitInvalid, fmt.Errorf("write schema: %w", err)}
				}
				fmt.Fprintln(cmd.OutOrStdout(), path)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write <group>/<kind>_<version>.json files into")
	return cmd
}
