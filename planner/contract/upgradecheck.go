package contract

import "fmt"

// The pre-flight check of a PostgreSQL major upgrade: a Job, rendered by
// the PostgresUpgradeCheck step and removed by the major upgrade's, that
// runs pg_upgrade --check on a restored copy of the newest base backup
// (runtime/instance/postgres/upgradecheck.go); observe reads its outcome.

// PGUpgradeCheckJob names the check Job of the upgrade from major from to
// major to: <cluster>-chk-<from>-<to>, short enough for the longest
// cluster name (the Job controller labels its pod with the Job's name,
// and a label stops at 63).
func PGUpgradeCheckJob(cluster string, from, to int) string {
	return fmt.Sprintf("%s-chk-%d-%d", cluster, from, to)
}

// Labels and container of the check Job. Its pod carries
// ComponentUpgradeCheck and LabelInstance but not the members' selector,
// so no Service, PodDisruptionBudget or member list ever takes it for a
// member.
const (
	// AppUpgradeCheck is the Job's LabelName, never the members'.
	AppUpgradeCheck       = "cairn-upgrade-check"
	ComponentUpgradeCheck = "upgrade-check"
	// LabelUpgradeFrom and LabelUpgradeTo are the majors the Job checks.
	LabelUpgradeFrom        = LabelPrefix + "upgrade-from"
	LabelUpgradeTo          = LabelPrefix + "upgrade-to"
	PGUpgradeCheckContainer = "pg-upgrade-check"
	// PGUpgradeCheckWorkDir is where the Job's scratch emptyDir
	// (PGUpgradeCheckScratchVolume) is mounted: the restored copy and the
	// new major's scratch cluster.
	PGUpgradeCheckWorkDir       = "/scratch"
	PGUpgradeCheckScratchVolume = "scratch"
)

// TerminationMessageMax is how much of a container's termination message
// Kubernetes keeps (4096 bytes); the check writes its refusal within it.
const TerminationMessageMax = 4096
