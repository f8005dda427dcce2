package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/planner/spec"
)

func newSchema() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "schema [KIND] [--out DIR]",
		Short: "Print or write the JSON Schemas of the spec kinds",
		Long: `Print the JSON Schema of one spec kind (PostgresCluster or EtcdCluster), or
with --out write one file per kind (<kind>.json, lower case) into DIR. The
committed copies live in docs/schemas/.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kinds := spec.Kinds()
			if len(args) == 1 {
				kinds = []string{args[0]}
			}
			if out == "" && len(kinds) != 1 {
				return &exitError{exitUsage, fmt.Errorf("cairn schema: name a kind (%s) or give --out DIR", strings.Join(spec.Kinds(), ", "))}
			}
			for _, k := range kinds {
				data, err := spec.Schema(k)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				if out == "" {
					_, err = cmd.OutOrStdout().Write(data)
					return err
				}
				if err := os.WriteFile(filepath.Join(out, strings.ToLower(k)+".json"), data, 0o644); err != nil {
					return &exitError{exitInvalid, fmt.Errorf("write schema: %w", err)}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write <kind>.json files into")
	return cmd
}
