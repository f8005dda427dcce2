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
		Use:     "schema [KIND] [--out DIR]",
		Short:   "Print or write the JSON Schemas of the spec kinds",
		Long:    schemaLong(),
		Example: schemaExample(),
		Args:    cobra.MaximumNArgs(1),
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

// schemaLong is `cairn schema --help`'s text, naming the table's kinds
// and their schemas' paths.
func schemaLong() string {
	served := specKinds()
	var paths []string
	for _, k := range served.Names() {
		p, _ := served.SchemaPath(k)
		paths = append(paths, "  DIR/"+p)
	}
	first := ""
	if len(paths) > 0 {
		first = strings.TrimPrefix(paths[0], "  DIR/")
	}
	return `Print the JSON Schema of one spec kind (` + strings.Join(served.Names(), " or ") + `), or
with --out write each kind's (or the one named) into DIR, at a path that
changes only with the apiVersion:

` + strings.Join(paths, "\n") + `

Run it at the root of your GitOps repo (cairn schema --out schemas) and
name the schema on the first line of each spec, relative to the spec:

  # yaml-language-server: $schema=../../schemas/` + first + `

The schemas check what cairn validate checks, but for the few rules
docs/spec-reference.md lists. The committed copies live in docs/schemas/.`
}

// schemaExample is `cairn schema --help`'s example, with the table's first
// kind.
func schemaExample() string {
	kind := "KIND"
	if names := specKinds().Names(); len(names) > 0 {
		kind = names[0]
	}
	return `  # the schema of one kind, for an editor
  cairn schema ` + kind + ` > ` + strings.ToLower(kind) + `.json

  # every kind's schema into the GitOps repo, at the paths the modeline names
  cairn schema --out schemas`
}
