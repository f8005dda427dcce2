package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Postgres is the strategy of PostgresCluster.
func Postgres() Strategy { return postgresStrategy{} }

type postgresStrategy struct{}

func (postgresStrategy) Kind() string { return spec.PostgresKind }

func (postgresStrategy) Plan(c spec.Cluster, obs *live.Cluster, want Want) Result {
	return planPostgres(c.(*spec.PostgresCluster), obs, want)
}

// pgModel is the settled shape of a PostgreSQL cluster while steps are
// planned: members at ordinals 0..size-1, all at version, one primary.
type pgModel struct {
	name    string
	size    int
	version spec.Version
	primary int
	sync    int
}

// pgCreateStep is the create step, gated first on the Secrets the
// members' passwords come from.
func pgCreateStep(c *spec.PostgresCluster, n int) plan.Step {
	s := createStep(c, n, "instances", pgRevision(c, c.Spec.Resources.Contract(), c.Spec.Version.Parse().Major, nil, false))
	name := c.Ref().Name
	s.Gates = append([]plan.Gate{gate(plan.GateSecretsExist, plan.Before, fmt.Sprintf(
		"the Secrets %s and %s (key: %s) exist; cairn never writes passwords to Git",
		contract.SuperuserSecret(name), contract.ReplicationSecret(name), contract.SecretKeyPassword))}, s.Gates...)
	return s
}

func planPostgres(c *spec.PostgresCluster, obs *live.Cluster, env Want) Result {
	var r Result
	n := c.Spec.Instances
	if n < 1 || n > MaxPostgresInstances {
		why := "more members than that add replication load on the primary and no safety"
		if n < 1 {
			why = "a cluster needs its primary; cairn never removes the last member (to retire a cluster, delete its spec and then the cluster by hand)"
		}
		r.refuse(RulePostgresInstancesRange, "spec.instances", "instances must be 1 to %d, got %d: %s", MaxPostgresInstances, n, why)
	}
	refuseIssuerNamespace(&r, c, postgresIssuerRules)
	if obs == nil {
		if len(r.Refusals) == 0 {
			r.add(pgCreateStep(c, n))
			r.add(seal())
		}
		return r
	}
	refuseIssuerChange(&r, c, obs, postgresIssuerRules)
	refuseShrink(&r, c, obs)
	refuseStorageClass(&r, c, obs)
	want := c.Spec.Version.Parse()
	cur, ok := pgCurrentVersion(&r, obs)
	major := ok && want.Major != cur.Major
	switch {
	case major && want.Major < cur.Major:
		r.refuse(RulePostgresMajorDowngrade, "spec.version", "PostgreSQL cannot go back from %d to %d: pg_upgrade only moves forward. Keep %d.x or newer; going back means restoring a backup into a new cluster", cur.Major, want.Major, cur.Major)
	case major && c.Spec.Backup == nil:
		r.refuse(RulePostgresMajorNeedsBackup, "spec.backup", "a major upgrade from %s to %s is gated on a fresh, verified backup; configure spec.backup first", cur, want)
	}
	if len(r.Refusals) > 0 || pgWaits(&r, obs, leavingFrom(obs, n)) {
		relieveWhileWaiting(&r, c, obs, func(while string) []plan.Step { return pgRelief(c, obs, while) })
		return r
	}
	m := pgModel{name: c.Metadata.Name, size: len(obs.Members), version: cur, sync: obs.SynchronousStandbys}
	for _, mem := range obs.Members {
		if mem.Role == live.RolePrimary {
			m.primary = mem.Ordinal()
		}
	}
	asked := pgRequested(&r, c, obs, &m)
	pgFinish(&r, obs, &m, want)
	backupStep(&r, c, obs)
	storageStep(&r, c, obs)
	pgDropUpgradeCheck(&r, c, obs, cur, want)
	if major {
		// The primary runs alone after the upgrade: every replica is
		// re-cloned in the one step after it (pgResizeAt), before any
		// restart below, which then runs at the spec's size.
		pgMajor(&r, c, obs, &m, want, n)
		pgTemplate(&r, c, obs, &m, env.Images)
		pgResize(&r, &m, n)
	} else {
		pgSync(&r, &m, min(m.sync, c.Spec.SynchronousStandbys), "before members are removed")
		existing := m.size
		pgResizeAt(&r, &m, pgSizeBefore(m.size, n), want)
		if m.version != want {
			cur := m.version.String()
			pgRoll(&r, &m, allOrdinals(min(existing, m.size)), func(int) string { return cur }, want)
		}
		pgTemplate(&r, c, obs, &m, env.Images)
		pgResize(&r, &m, n)
	}
	if asked {
		pgRequestedSwitchover(&r, c, &m)
	}
	pgSync(&r, &m, c.Spec.SynchronousStandbys, "as the spec asks")
	pgTLS(&r, c, obs)
	networkStep(&r, "PostgreSQL", obs)
	runtimeStep(&r, obs)
	sayImages(&r, obs, env.Images, contract.PostgresContainer)
	sealStep(&r, obs)
	return r
}

func pgCurrentVersion(r *Result, obs *live.Cluster) (spec.Version, bool) {
	if len(obs.Members) == 0 {
		return spec.Version{}, false // settle waits for the pods
	}
	v := obs.StatefulSet.Version
	if v == "" && len(obs.Members) > 0 {
		v = obs.Members[0].Version
	}
	cur, err := spec.ParseRelease(v, 2)
	if err != nil {
		r.refuse(RuleUnknownVersion, "", "the cluster reports PostgreSQL version %q, which cairn cannot read; fix the observed state first", v)
		return spec.Version{}, false
	}
	for _, m := range obs.Members {
		mv, err := spec.ParseRelease(m.Version, 2)
		if err != nil {
			r.refuse(RuleUnknownVersion, "", "member %s reports PostgreSQL version %q, which cairn cannot read", m.Name, m.Version)
			return spec.Version{}, false
		}
		// Members at or above the partition are being moved to the
		// template's version (settle waits for them); below it, two
		// majors side by side mean something went wrong.
		if mv.Major != cur.Major && m.Ordinal() < obs.StatefulSet.UpdatePartition {
			r.refuse(RuleUnknownVersion, "", "member %s runs PostgreSQL %s but the StatefulSet runs %s: members on different major versions need a person to look", m.Name, mv, cur)
			return spec.Version{}, false
		}
	}
	return cur, true
}

// pgWaits reports (and records) everything in flight: pods, readiness,
// and a missing or doubled primary, which the runtime resolves on its own.
// Replicas at or above leaving, which the plan removes, need not be ready.
func pgWaits(r *Result, obs *live.Cluster, leaving int) bool {
	if settle(r, obs) || notReady(r, obs, leaving) {
		return true
	}
	var primaries []string
	for _, m := range obs.Members {
		switch m.Role {
		case live.RolePrimary:
			primaries = append(primaries, m.Name)
		case live.RoleUnknown:
			if m.Ordinal() >= leaving && !m.Ready {
				continue // going away: what it is does not matter
			}
			r.wait(memberGate(plan.GateMemberReady, plan.Before, m.Name, "the runtime reports the role of "+m.Name))
		}
	}
	switch {
	case len(r.Waiting) > 0:
	case len(primaries) == 0 && len(obs.Members) > 0:
		r.wait(gate(plan.GatePrimary, plan.Before, "the cluster has a primary (the runtime fails over on its own)"))
	case len(primaries) > 1:
		r.wait(gate(plan.GatePrimary, plan.Before, fmt.Sprintf("exactly one primary; %v all claim it and the runtime fences all but one", primaries)))
	}
	return len(r.Waiting) > 0
}

// pgFinish plans the rest of a rolling minor upgrade under way: the
// members below the partition not yet at the template's version. When the
// spec was set back to the version those members still run, the upgrade
// is reverted instead: the members already moved go back, one at a time,
// without first finishing what is being reverted.
func pgFinish(r *Result, obs *live.Cluster, m *pgModel, want spec.Version) {
	k := min(obs.StatefulSet.UpdatePartition, m.size)
	from := func(ord int) string { return obs.Members[ord].Version }
	if pgReverting(obs, m, want) {
		var back []int
		for ord := m.size - 1; ord >= k; ord-- {
			if obs.Members[ord].Version != want.String() {
				back = append(back, ord)
			}
		}
		pgRoll(r, m, back, from, want)
		return
	}
	var left []int
	for ord := k - 1; ord >= 0; ord-- {
		if obs.Members[ord].Version != m.version.String() {
			left = append(left, ord)
		}
	}
	pgRoll(r, m, left, from, m.version)
}

// pgReverting: a rolling minor upgrade is under way (the partition above
// 0), and the spec names the version every member below the partition
// still runs.
func pgReverting(obs *live.Cluster, m *pgModel, want spec.Version) bool {
	k := min(obs.StatefulSet.UpdatePartition, m.size)
	if k == 0 || want == m.version || want.Major != m.version.Major {
		return false
	}
	for _, mem := range obs.Members[:k] {
		if mem.Version != want.String() {
			return false
		}
	}
	return true
}

// allOrdinals are size-1 down to 0.
func allOrdinals(size int) []int {
	out := make([]int, size)
	for i := range out {
		out[i] = size - 1 - i
	}
	return out
}

// pgRoll moves the members ords (highest first) to version to, one per
// step, each lowering the partition to its ordinal; the others run it
// already. When the rollout reaches the primary, the primary hands over
// to the nearest member above it that runs to: one switchover wherever
// it sits. Only a primary the rollout reaches first is handed to the
// member it reaches last, which hands over once more at its turn. The
// same rule from every intermediate state gives the same remaining steps.
func pgRoll(r *Result, m *pgModel, ords []int, from func(ord int) string, to spec.Version) {
	purpose := "for-" + to.String()
	done := map[int]bool{}
	for o := range m.size {
		if !slices.Contains(ords, o) {
			done[o] = true
		}
	}
	for _, ord := range ords {
		if ord == m.primary && m.size > 1 {
			if t, ok := restartedTarget(done, ord); ok {
				pgSwitchover(r, m, t, purpose, "to a member that runs "+to.String()+" already, before the old primary restarts")
			} else {
				pgSwitchover(r, m, ords[len(ords)-1], purpose, "to the member the rollout reaches last, so that it does not restart the primary first")
			}
		}
		r.add(pgUpgradeStep(m, ord, from(ord), to))
		done[ord] = true
	}
	m.version = to
}

func pgUpgradeStep(m *pgModel, ord int, from string, to spec.Version) plan.Step {
	name := contract.MemberName(m.name, ord)
	fromV, _ := spec.ParseRelease(from, 2)
	primary := ord == m.primary
	s := plan.Step{
		ID:         fmt.Sprintf("upgrade-%d-to-%s", ord, to),
		Kind:       plan.UpgradeMember,
		Summary:    fmt.Sprintf("%s replica %s from %s to %s (StatefulSet partition %d)", moveVerb(fromV, to), name, from, to, ord),
		Disruptive: primary || m.size-2 < m.sync,
		Reversible: true,
		Rollback:   fmt.Sprintf("Set spec.version back to %s: cairn moves the members that run %s back, one at a time (minor versions share the data format).", from, to),
		Gates:      []plan.Gate{healthyBefore()},
		Params: plan.Params{UpgradeMember: &plan.UpgradeMemberParams{
			Member: name, Ordinal: ord, From: from, To: to.String(), Partition: ord, Replicas: m.size,
		}},
	}
	after := memberGate(plan.GateReplicaStreaming, plan.After, name, name+" streams from the primary")
	if primary {
		s.Summary = fmt.Sprintf("%s the only member %s from %s to %s; the database is down while it restarts", moveVerb(fromV, to), name, from, to)
		after = memberGate(plan.GatePrimary, plan.After, name, name+" is the primary")
	} else if s.Disruptive {
		s.Summary += fmt.Sprintf("; commits wait while it restarts (%d synchronous standby(s) wanted)", m.sync)
	}
	s.Gates = append(s.Gates,
		plan.Gate{Kind: plan.GateMemberVersion, When: plan.After, Member: name, Version: to.String(), Description: name + " runs " + to.String()},
		after, healthyAfter())
	return s
}

// pgSwitchover hands the primary role to ordinal to. purpose makes the ID
// unique in a plan ("for-14.9", "for-scale-in").
func pgSwitchover(r *Result, m *pgModel, to int, purpose, why string) {
	r.add(pgSwitchoverStep(m, to, fmt.Sprintf("switchover-%d-to-%d-%s", m.primary, to, purpose), why))
	m.primary = to
}

// pgSwitchoverStep is the step that hands the primary role from the
// model's primary to ordinal to: gated on the target streaming and caught
// up, done when it is the primary.
func pgSwitchoverStep(m *pgModel, to int, id, why string) plan.Step {
	from, target := contract.MemberName(m.name, m.primary), contract.MemberName(m.name, to)
	return plan.Step{
		ID:         id,
		Kind:       plan.PostgresSwitchover,
		Summary:    fmt.Sprintf("Switch the primary over from %s to %s %s; writes pause for a few seconds", from, target, why),
		Disruptive: true,
		Reversible: true,
		Rollback:   fmt.Sprintf("Nothing is lost to undo: %s goes on as a streaming replica, and no committed transaction is lost. cairn does not move the primary back; every later plan starts from the member that is primary.", from),
		Gates: []plan.Gate{healthyBefore(),
			memberGate(plan.GateReplicaStreaming, plan.Before, target, target+" streams from the primary and has caught up"),
			memberGate(plan.GatePrimary, plan.After, target, target+" is the primary"),
			healthyAfter()},
		Params: plan.Params{PostgresSwitchover: &plan.PostgresSwitchoverParams{From: from, To: target, Reason: why}},
	}
}

// pgResize adds replicas at the top or removes them from the top, moving
// the primary away from a member before it is removed.
func pgResize(r *Result, m *pgModel, target int) {
	pgResizeAt(r, m, target, m.version)
}

// pgResizeAt is pgResize with new replicas cloned at version at: a minor
// version the rolling upgrade that follows brings the others to (a
// standby may run a newer minor than its primary, the order PostgreSQL's
// minor upgrades go in), so a new replica is not upgraded right after it
// was cloned. The add step then also sets the template's version, with the
// partition at the new member.
//
// Replicas come one step each, except for a primary running alone (a
// cluster of one grown, or the primary right after a major upgrade): it
// has no member to fail over to until they stream, so it gets all of them
// in one step, one review, and the StatefulSet starts them one after
// another, each cloned once the one before is ready.
func pgResizeAt(r *Result, m *pgModel, target int, at spec.Version) {
	for m.size < target {
		first, next := m.size, m.size+1
		if m.size == 1 {
			next = target
		}
		var names []string
		gates := []plan.Gate{healthyBefore()}
		for ord := first; ord < next; ord++ {
			name := contract.MemberName(m.name, ord)
			names = append(names, name)
			gates = append(gates,
				memberGate(plan.GateMemberReady, plan.After, name, name+" is ready"),
				memberGate(plan.GateReplicaStreaming, plan.After, name, name+" streams from the primary"))
		}
		params := &plan.PostgresAddReplicaParams{Member: names[0], Ordinal: first, Replicas: next}
		if at != m.version {
			params.Version, params.Partition = at.String(), first
		}
		id := fmt.Sprintf("pg-add-%d", first)
		summary := fmt.Sprintf("Add replica %s at %s, cloned from the primary with pg_basebackup (%d -> %d members)", names[0], at, first, next)
		rollback := "Lower spec.instances again; the replica is removed (its volume is kept by the StatefulSet)."
		if len(names) > 1 {
			params.Members = names
			id = fmt.Sprintf("pg-add-%d-to-%d", first, next-1)
			summary = fmt.Sprintf("Add replicas %s at %s in one step, each cloned from the primary with pg_basebackup, one after another as the StatefulSet starts them (%d -> %d members): the primary runs alone until the first streams, so they do not wait for a pull request each",
				strings.Join(names, ", "), at, first, next)
			rollback = "Lower spec.instances again; the replicas are removed (their volumes are kept by the StatefulSet)."
		}
		r.add(plan.Step{
			ID:         id,
			Kind:       plan.PostgresAddReplica,
			Summary:    summary,
			Reversible: true,
			Rollback:   rollback,
			Gates:      append(gates, healthyAfter()),
			Params:     plan.Params{PostgresAddReplica: params},
		})
		m.size = next
	}
	for m.size > target {
		ord := m.size - 1
		if ord == m.primary {
			pgSwitchover(r, m, 0, "for-scale-in", "because the primary's member is being removed")
		}
		name := contract.MemberName(m.name, ord)
		r.add(plan.Step{
			ID:         fmt.Sprintf("scale-in-%d", ord),
			Kind:       plan.ScaleIn,
			Summary:    fmt.Sprintf("Remove replica %s (%d -> %d members)", name, m.size, m.size-1),
			Reversible: true,
			Rollback:   "Raise spec.instances again; the replica is re-cloned from the primary.",
			Gates: []plan.Gate{healthyBelow(target),
				memberGate(plan.GatePrimary, plan.Before, contract.MemberName(m.name, m.primary), contract.MemberName(m.name, m.primary)+" is the primary, not "+name),
				gate(plan.GateStatefulSetSettled, plan.After, "the StatefulSet runs "+pods(ord))},
			Params: plan.Params{ScaleIn: &plan.ScaleInParams{Member: name, Ordinal: ord, Replicas: ord}},
		})
		m.size--
	}
}

// pgSizeBefore is the size to grow or shrink to before a rolling upgrade
// and a template's restart: upgradeSize's, except that a primary running
// alone gets every replica the spec asks for first, in one step
// (pgResizeAt), rather than one replica, the restarts, and the rest one
// pull request each while it has only that one to fail over to.
func pgSizeBefore(cur, want int) int {
	if cur == 1 {
		return want
	}
	return upgradeSize(cur, want, 2)
}

// pgMajor plans an offline major upgrade: a fresh backup, pg_upgrade
// --check on it while the database runs (pgcheck.go), the primary on
// ordinal 0, no synchronous standbys, pg_upgrade with the replicas
// stopped, then re-cloned replicas. The backup comes first and is held
// for the maintenance window, as the upgrade is, so both go in one
// window; the synchronous standbys are lowered only after it, right
// before the upgrade, so commits stay synchronous while a long backup
// runs. A shorter retention is refused while the upgrade relies on its
// backup.
func pgMajor(r *Result, c *spec.PostgresCluster, obs *live.Cluster, m *pgModel, to spec.Version, instances int) {
	backupID, taken := preStepBackup(obs.Backup, "backup-before-"+to.String())
	refuseShorterRetention(r, backupID, "the major upgrade to "+to.String())
	if !taken {
		pgTakeBackup(r, c, m, to, backupID)
	}
	pgUpgradeCheck(r, c, obs, m.version, to)
	if m.primary != 0 && m.size > 1 {
		pgSwitchover(r, m, 0, "for-"+to.String(), "so the upgrade runs on the member the StatefulSet keeps")
	}
	pgSync(r, m, 0, "so the primary does not wait for standbys while they are re-cloned")
	primary := contract.MemberName(m.name, 0)
	summary := fmt.Sprintf("Upgrade PostgreSQL from %s to %s offline with pg_upgrade on %s: the replicas stop, the database is down during the upgrade", m.version, to, primary)
	if c.Spec.Instances > 1 {
		summary += fmt.Sprintf("; afterwards %s runs alone, with no replica to fail over to, until the step that follows re-clones its %d replica(s), all in one pull request", primary, c.Spec.Instances-1)
	}
	r.add(plan.Step{
		ID:         "pg-major-upgrade-" + to.String(),
		Kind:       plan.PostgresMajorUpgrade,
		Summary:    summary,
		Disruptive: true,
		Reversible: false,
		Rollback: fmt.Sprintf("Not reversible: pg_upgrade rewrites the data directory for %d. To go back, restore the backup from step %s into a new cluster at %s; the runtime keeps that backup pinned, whatever the retention, until it is released with cairn backup release.",
			to.Major, backupID, m.version),
		Gates: []plan.Gate{healthyBefore(),
			freshBackupGate(),
			upgradeCheckedGate(plan.Before, m.version, to),
			memberGate(plan.GatePrimary, plan.Before, primary, primary+" is the primary"),
			{Kind: plan.GateMemberVersion, When: plan.After, Member: primary, Version: to.String(), Description: primary + " runs " + to.String()},
			memberGate(plan.GatePrimary, plan.After, primary, primary+" is the primary and takes writes")},
		Params: plan.Params{PostgresMajorUpgrade: &plan.PostgresMajorUpgradeParams{From: m.version.String(), To: to.String(), Primary: primary}},
	})
	m.size, m.version = 1, to
	pgResize(r, m, instances)
}

// pgTakeBackup asks the runtime for the backup the major upgrade's
// rollback restores, held for the maintenance window as the upgrade is.
// A re-plan leaves it out once the runtime reports the request served,
// and asks again under a new ID once that backup is stale (preStepBackup).
func pgTakeBackup(r *Result, c *spec.PostgresCluster, m *pgModel, to spec.Version, id string) {
	summary := fmt.Sprintf("Take a backup now, right before the major upgrade from %s to %s", m.version, to)
	if c.Spec.MaintenanceWindow != nil {
		summary = fmt.Sprintf("Take a backup in the maintenance window, right before the major upgrade from %s to %s", m.version, to)
	}
	r.add(takeBackupStep(c, id, summary, fmt.Sprintf("major upgrade from %s to %s", m.version, to), true))
}

// pgSync sets the number of synchronous standbys to n if it differs.
func pgSync(r *Result, m *pgModel, n int, why string) {
	if m.sync == n {
		return
	}
	r.add(plan.Step{
		ID:         fmt.Sprintf("sync-standbys-%d", n),
		Kind:       plan.PostgresSynchronousStandbys,
		Summary:    fmt.Sprintf("Set synchronous standbys from %d to %d %s (a reload, no restart)", m.sync, n, why),
		Reversible: true,
		Rollback:   fmt.Sprintf("Set spec.synchronousStandbys back to %d: cairn plans it as another reload.", m.sync),
		Gates:      []plan.Gate{healthyBefore(), healthyAfter()},
		Params:     plan.Params{PostgresSynchronousStandbys: &plan.PostgresSynchronousStandbysParams{From: m.sync, To: n}},
	})
	m.sync = n
}
