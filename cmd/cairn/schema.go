package main

import "github.com/spf13/cobra"

func newSchema() *cobra.Command {
	return &cobra.Command{Use: "schema", Short: "Write the JSON Schemas of the spec kinds", Hidden: true}
}
