package planner

import (
	"fmt"
	"strconv"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// pgUpgradeCheck plans the major upgrade's pre-flight check, right after
// the backup it relies on and before anything disruptive: a Job runs the
// new major's pg_upgrade --check on the newest base backup restored into
// a scratch volume, so an upgrade pg_upgrade would refuse is found while
// the database runs, never with the primary already down. It touches no
// member, so it needs only the fresh backup (the gate the upgrade has
// too), not a healthy cluster. A re-plan leaves it out once the Job for
// these majors exists, whatever its outcome: the upgrade's own gate then
// waits for it to pass and shows pg_upgrade's reason when it failed.
func pgUpgradeCheck(r *Result, c *spec.PostgresCluster, obs *live.Cluster, from, to spec.Version) {
	if u := obs.UpgradeCheck; u != nil && u.From == from.Major && u.To == to.Major {
		return
	}
	job := contract.PGUpgradeCheckJob(c.Metadata.Name, from.Major, to.Major)
	r.add(plan.Step{
		ID:   "pg-upgrade-check-" + to.String(),
		Kind: plan.PostgresUpgradeCheck,
		Summary: fmt.Sprintf("Check the upgrade from %s to %s before any downtime: Job %s restores the newest verified base backup into a scratch volume and runs PostgreSQL %d's pg_upgrade --check on it; no member stops or is touched",
			from, to, job, to.Major),
		Reversible: true,
		Rollback:   fmt.Sprintf("Nothing to undo: the Job changes no member and reads only the backups. The major upgrade's step removes it; to run it again (after fixing what pg_upgrade named and taking a new backup), delete the finished Job %s and Argo CD or Flux creates it anew.", job),
		Gates: []plan.Gate{freshBackupGate(),
			upgradeCheckedGate(plan.After, from, to)},
		Params: plan.Params{PostgresUpgradeCheck: &plan.PostgresUpgradeCheckParams{
			From: from.String(), To: to.String(), Job: job, StorageLocation: string(c.Spec.Backup.StorageLocation)}},
	})
}

// upgradeCheckedGate holds until the pre-flight check of the upgrade
// from to to passed.
func upgradeCheckedGate(when plan.Phase, from, to spec.Version) plan.Gate {
	return plan.Gate{Kind: plan.GateUpgradeChecked, When: when, Version: to.String(),
		Description: fmt.Sprintf("pg_upgrade --check passed for the upgrade from %d to %d on the newest base backup", from.Major, to.Major)}
}

// pgDropUpgradeCheck removes the pre-flight check Job of a major upgrade
// spec.version no longer asks for (set back to the running major after
// the check's step merged): the manifests hold the Job as it runs until
// a step removes it, and no other step may (nothing rides in another
// step's pull request). An upgrade asked for again plans its check anew.
func pgDropUpgradeCheck(r *Result, c *spec.PostgresCluster, obs *live.Cluster, cur, want spec.Version) {
	u := obs.UpgradeCheck
	if u == nil || u.From != cur.Major || want.Major != cur.Major {
		return
	}
	job := contract.PGUpgradeCheckJob(c.Metadata.Name, u.From, u.To)
	r.add(plan.Step{
		ID:         fmt.Sprintf("pg-upgrade-check-remove-%d-%d", u.From, u.To),
		Kind:       plan.PostgresUpgradeCheck,
		Summary:    fmt.Sprintf("Remove Job %s, the pre-flight check of the upgrade from %d to %d that spec.version no longer asks for; no member is touched", job, u.From, u.To),
		Reversible: true,
		Rollback:   "Ask for the upgrade again in spec.version: its check is planned anew.",
		Gates: []plan.Gate{{Kind: plan.GateUpgradeCheckRemoved, When: plan.After,
			Description: "the pre-flight check Job " + job + " is gone"}},
		Params: plan.Params{PostgresUpgradeCheck: &plan.PostgresUpgradeCheckParams{
			From: cur.String(), To: strconv.Itoa(u.To), Job: job, Remove: true}},
	})
}
