package gates

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
)

// upgradeChecked holds a major upgrade until its pre-flight Job, for the
// major the cluster runs to to's, passed. A refusal shows pg_upgrade's own
// words, so `cairn status` and the pull request say what to fix.
func upgradeChecked(obs *live.Cluster, to string) (bool, string) {
	want, err := spec.ParseRelease(to, 2)
	if err != nil {
		return false, fmt.Sprintf("the gate names no PostgreSQL version: %v", err)
	}
	from, err := spec.ParseRelease(obs.StatefulSet.Version, 2)
	if err != nil {
		return false, fmt.Sprintf("the cluster's version %q is not observed", obs.StatefulSet.Version)
	}
	u := obs.UpgradeCheck
	switch {
	case u == nil:
		return false, fmt.Sprintf("no pre-flight check of the upgrade from %d to %d has run (its step is not merged, or its Job was deleted)", from.Major, want.Major)
	case u.From != from.Major || u.To != want.Major:
		return false, fmt.Sprintf("the pre-flight check Job checks the upgrade from %d to %d, not from %d to %d", u.From, u.To, from.Major, want.Major)
	case u.Result == live.UpgradeCheckFailed:
		return false, "the check failed; fix what it names, take a new backup, and delete the failed Job so it runs again: " + u.Reason
	case u.Result != live.UpgradeCheckPassed:
		return false, fmt.Sprintf("the pre-flight check of the upgrade from %d to %d is still running", from.Major, want.Major)
	}
	return true, ""
}
