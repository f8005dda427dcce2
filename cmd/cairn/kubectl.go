package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// The names the binary answers to besides cairn. kubectl runs a plugin
// named kubectl-<name> on its PATH for `kubectl <name>` (krew installs
// the binary under that name: deploy/krew/cairn.yaml), and asks a program
// named kubectl_complete-<name> for the completions of `kubectl <name>`
// (kubectl 1.26 and later); both may be links to the one binary.
const (
	pluginName     = "kubectl-cairn"
	completionName = "kubectl_complete-cairn"
	pluginDisplay  = "kubectl cairn"
)

// invocation is how the program was called: argv[0]'s name decides what
// help and usage call the command ("cairn" or "kubectl cairn"), and, for
// the completion program, the arguments become cobra's __complete request.
func invocation(argv []string) (display string, args []string) {
	if len(argv) == 0 {
		return "cairn", nil
	}
	// The base name, whichever separator the system uses.
	name := strings.TrimSuffix(argv[0][strings.LastIndexAny(argv[0], `/\`)+1:], ".exe")
	switch name {
	case pluginName:
		return pluginDisplay, argv[1:]
	case completionName:
		return pluginDisplay, append([]string{cobra.ShellCompRequestCmd}, argv[1:]...)
	}
	return "cairn", argv[1:]
}

// showAs makes help, usage and completion scripts name the root command
// display ("kubectl cairn") instead of its Use.
func showAs(root *cobra.Command, display string) {
	if display == root.Name() {
		return
	}
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = display
}
