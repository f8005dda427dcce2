package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/policies"
)

// clock is the time policies decide at: now, or --now for a reproducible
// plan ("what would cairn do at 22:00 on Friday?").
var clock = time.Now

// policySet is the policies in force: the maintenance windows the specs
// set, and the policy files under the repo's policies/ folder.
func policySet(repo string) (policies.Set, error) {
	now := clock()
	files, err := policies.LoadDir(filepath.Join(repo, "policies"), now)
	if err != nil {
		return nil, &exitError{exitInvalid, err}
	}
	return append(policies.Set{policies.SpecWindow{Now: now}}, files...), nil
}

// policyCommands are the commands that decide policies and so take --now.
var policyCommands = []string{"cairn plan", "cairn render", "cairn status", "cairn diff", "cairn propose", "cairn reconcile", "cairn policy test"}

// addNowFlag adds --now to the commands of root that decide policies; call
// it once every command is added.
func addNowFlag(root *cobra.Command) {
	var now string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if slices.Contains(policyCommands, c.CommandPath()) {
			c.Flags().StringVar(&now, "now", "", "decide policies as at this RFC 3339 time instead of now")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if now == "" {
			clock = time.Now
			return nil
		}
		t, err := time.Parse(time.RFC3339, now)
		if err != nil {
			return &exitError{exitUsage, fmt.Errorf("--now must be an RFC 3339 time such as 2026-11-30T22:00:00Z: %v", err)}
		}
		clock = func() time.Time { return t }
		return nil
	}
}
