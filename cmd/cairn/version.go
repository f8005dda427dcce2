package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/version"
)

func newVersion() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version [-o text|json|yaml]",
		Short: "Print the release, commit, commit date and Go toolchain of this cairn binary",
		Example: `  cairn version
  cairn version -o json`,
		Args: cobra.NoArgs,
	}
	out := addOutput(cmd, formatText, formatJSON, formatYAML)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		format, err := out.get("cairn version")
		if err != nil {
			return err
		}
		v := version.Get()
		if format != formatText {
			return writeData(cmd.OutOrStdout(), format, v)
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), versionLine(v))
		return err
	}
	return cmd
}

// versionLine is the one-line text form: release, then what is known of
// the build. "commit unknown" only when neither the release stamps nor
// the build information name the commit.
func versionLine(v version.Info) string {
	rev := "commit unknown"
	if v.Revision != "" {
		rev = "commit " + v.Revision
		if v.Modified {
			rev += " (modified)"
		}
	}
	if v.Date != "" {
		rev += " of " + v.Date
	}
	return fmt.Sprintf("cairn %s (%s, %s, %s)", v.Release, rev, v.GoVersion, v.Platform)
}
