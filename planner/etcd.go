package planner

import (
	"fmt"
	"slices"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Etcd is the strategy of EtcdCluster.
func Etcd() Strategy { return etcdStrategy{} }

type etcdStrategy struct{}

func (etcdStrategy) Kind() string { return spec.EtcdKind }

func (etcdStrategy) Plan(c spec.Cluster, obs *live.Cluster, want Want) Result {
	return planEtcd(c.(*spec.EtcdCluster), obs, want)
}

// etcdModel is the settled shape of an etcd cluster while steps are
// planned: voters at ordinals 0..size-1, all at version.
type etcdModel struct {
	name    string
	size    int
	version spec.Version
	leader  int // ordinal of the leader; -1 when unknown
}

func planEtcd(c *spec.EtcdCluster, obs *live.Cluster, env Want) Result {
	var r Result
	size := c.Spec.Size
	switch {
	case size < 1:
		r.refuse(RuleEtcdSizeRange, "spec.size", "etcd size must be 1 to %d, got %d: a cluster needs at least one member; cairn never removes the last one (to retire a cluster, delete its spec and then the cluster by hand)", MaxEtcdSize, size)
	case size > MaxEtcdSize:
		r.refuse(RuleEtcdSizeRange, "spec.size", "etcd size must be 1 to %d, got %d: more members make every write slower and add no safety", MaxEtcdSize, size)
	case size%2 == 0:
		r.refuse(RuleEtcdSizeEven, "spec.size", "etcd size %d tolerates no more failures than %d; use %d or %d (even sizes occur only between steps)", size, size-1, size-1, size+1)
	}
	refuseIssuerNamespace(&r, c, etcdIssuerRules) // tlsissuer.go
	if obs == nil {
		if len(r.Refusals) == 0 {
			r.add(createStep(c, size, "members", etcdRevision(c, c.Spec.Resources.Contract(), nil, false, "")))
			r.add(seal())
		}
		return r
	}
	refuseIssuerChange(&r, c, obs, etcdIssuerRules)
	refuseShrink(&r, c, obs)
	refuseStorageClass(&r, c, obs)
	refuseQuotaBelowData(&r, c, obs)
	refuseEtcdUnknownTLS(&r, obs) // etcdtls.go
	reverting := etcdReverting(obs, c.Spec.Version.Parse())
	cur, ok := c.Spec.Version.Parse(), true
	if !reverting {
		cur, ok = etcdCurrentVersion(&r, obs)
	}
	var path []spec.Version
	down := ok && etcdDowngradeAsked(&r, c, obs, cur) // etcd_downgrade.go
	if ok && !down {
		var err error
		if path, err = spec.EtcdUpgradePath(cur, c.Spec.Version.Parse()); err != nil {
			r.refuse(RuleEtcdDowngrade, "spec.version", "%v; the cluster runs %s (keep %s.x or newer; going back needs a snapshot restore into a new cluster)", err, cur, fmt.Sprintf("%d.%d", cur.Major, cur.Minor))
		}
	}
	if len(r.Refusals) == 0 && etcdRecover(&r, c, obs) {
		return r
	}
	if len(r.Refusals) > 0 || etcdAlarms(&r, c, obs, env.Images) || etcdWaits(&r, obs, leavingFrom(obs, size)) {
		relieveWhileWaiting(&r, c, obs, nil)
		return r
	}
	m := etcdModel{name: c.Metadata.Name, leader: -1}
	m.version = cur
	etcdFinish(&r, obs, &m, reverting)
	backupStep(&r, c, obs)
	compactionStep(&r, c, obs)
	storageStep(&r, c, obs)
	etcdResize(&r, &m, upgradeSize(m.size, size, 3))
	etcdDowngrade(&r, c, obs, &m, down)
	etcdUpgrade(&r, c, obs, &m, path)
	etcdTemplate(&r, c, obs, &m, env.Images)
	etcdTLSRequire(&r, c, obs, &m) // etcdtls.go
	etcdResize(&r, &m, size)
	networkStep(&r, "etcd", obs)
	runtimeStep(&r, obs)
	sayImages(&r, obs, env.Images, contract.EtcdContainer)
	sealStep(&r, obs)
	return r
}

// etcdCurrentVersion is the version the cluster is at once what is in
// flight lands: the template's version while a rolling upgrade runs,
// otherwise the members' (lowest) version. Members may trail the template
// by one minor at most, and then only from their line's upgrade floor or
// above; they never lead it.
func etcdCurrentVersion(r *Result, obs *live.Cluster) (spec.Version, bool) {
	var versions []spec.Version
	for _, m := range obs.Members {
		v, err := spec.ParseRelease(m.Version, 3)
		if err != nil {
			r.refuse(RuleUnknownVersion, "", "member %s reports version %q, which cairn cannot read; fix the member or the observed state first", m.Name, m.Version)
			return spec.Version{}, false
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		return spec.Version{}, false // settle waits for the pods
	}
	cur := slices.MinFunc(versions, spec.Version.Compare)
	if obs.StatefulSet.Version != "" {
		t, err := spec.ParseRelease(obs.StatefulSet.Version, 3)
		if err != nil {
			r.refuse(RuleUnknownVersion, "", "the StatefulSet's template runs version %q, which cairn cannot read", obs.StatefulSet.Version)
			return spec.Version{}, false
		}
		for i, v := range versions {
			switch {
			case v.Major == t.Major && v.Minor == t.Minor+1 && obs.ClusterVersion == minorOf(t):
				// A member an upgrade reverted mid-way still has to move
				// back, and may: etcd has not raised its cluster version,
				// so no member ever ran the newer minor's data format.
				// Below the partition the plan moves it (the spec set
				// back); at or above it the StatefulSet does, and settle
				// waits for it (the step's pull request reverted, or the
				// template set back by hand, as RuleEtcdUpgradeFloor
				// advises). During a downgrade, the member restarting has
				// yet to move too.
				continue
			case v.Major != t.Major || v.Minor > t.Minor:
				r.refuse(RuleEtcdDowngrade, "", "member %s runs %s but the StatefulSet's template %s: etcd cannot go back across minor versions%s", obs.Members[i].Name, v, t, clusterVersionSays(obs, t))
				return t, false
			case t.Minor > v.Minor+1:
				r.refuse(RuleEtcdMinorSkip, "", "member %s runs %s but the StatefulSet's template %s: etcd upgrades one minor version at a time; set the template back to 3.%d by hand", obs.Members[i].Name, v, t, v.Minor+1)
				return t, false
			}
			// A move to the next minor started by hand, or planned under
			// a lower floor, is not finished across the floor.
			if f, ok := spec.EtcdUpgradeFloor(v); ok && t.Minor == v.Minor+1 && v.Compare(f.Floor) < 0 {
				r.refuse(RuleEtcdUpgradeFloor, "", "member %s runs %s but the StatefulSet's template %s: etcd supports upgrading to %s only from %s or newer: %s. cairn does not finish this upgrade; set the template back to %s by hand (or revert the pull request that raised it), and cairn moves every member to %s before planning %s again",
					obs.Members[i].Name, v, t, minorOf(t), f.Floor, f.Source, f.Newest, f.Newest, minorOf(t))
				return t, false
			}
		}
		cur = t
	}
	if !spec.EtcdLineSupported(cur) {
		r.refuse(RuleUnknownVersion, "", "the cluster runs etcd %s, which cairn cannot upgrade from (supported: %s); move it to a supported version by hand first", cur, spec.EtcdSupported())
		return cur, false
	}
	return cur, true
}

// clusterVersionSays says why a member one minor ahead of template t
// cannot simply move back: etcd raised its cluster version past t's
// minor, or does not report it, so a member may have run the newer
// minor's data format.
func clusterVersionSays(obs *live.Cluster, t spec.Version) string {
	switch {
	case obs.ClusterVersion == "":
		return "; etcd reports no cluster version, so cairn cannot tell whether the members already run that minor's data format"
	case obs.ClusterVersion != minorOf(t):
		return fmt.Sprintf("; etcd has raised its cluster version to %s, and the members run that minor's data format", obs.ClusterVersion)
	}
	return ""
}

// etcdWaits reports (and records) everything in flight that must land
// before another change: quorum, pods, readiness, learners, replacements.
//
// Members at or above going, which the plan removes, need be neither
// ready nor voters: a dead member or a stuck learner does not block its
// own removal while the others keep quorum.
func etcdWaits(r *Result, obs *live.Cluster, going int) bool {
	voters, healthy := 0, 0
	for _, m := range obs.Members {
		if m.IsVoter() || m.Role == live.RoleUnknown || m.DataLost {
			voters++
			if m.IsVoter() && m.Ready && !m.DataLost {
				healthy++
			}
		}
	}
	if voters > 0 && healthy < voters/2+1 {
		if last := obs.Members[len(obs.Members)-1]; healthy == voters-1 && last.IsVoter() && !last.Ready && !last.DataLost {
			// A voter just added (etcd before 3.4 has no learners) that has
			// not started yet: quorum returns when it has joined.
			r.wait(memberGate(plan.GateMemberReady, plan.Before, last.Name, fmt.Sprintf(
				"%s is starting; with %d voters the cluster has no quorum until it has joined", last.Name, voters)))
			return true
		}
		r.wait(gate(plan.GateClusterHealthy, plan.Before, fmt.Sprintf(
			"quorum is lost (%d of %d voters healthy): cairn takes no automatic action; bring members back, or, if it stays lost, review the recovery step cairn proposes (docs/etcd-recovery.md)", healthy, voters)))
		return true
	}
	if settle(r, obs) {
		return true
	}
	leaders := 0
	for i, m := range obs.Members {
		// The highest member, removed from the membership and waiting for
		// the StatefulSet to shrink, has stopped: it is not ready, and need
		// not be.
		leaving := m.Role == live.RoleRemoved && i == len(obs.Members)-1 && obs.StatefulSet.Replicas == i+1
		switch {
		case leaving:
		case m.Ordinal() >= going && !m.DataLost && m.Role != live.RoleRemoved && m.Role != live.RoleLeader:
			// removed by this plan, whatever its state
		case m.DataLost:
			r.wait(memberGate(plan.GateMemberVoter, plan.Before, m.Name, "the runtime replaces "+m.Name+", whose data was lost: it removes the member, then re-adds it as a learner"))
		case !m.Ready:
			r.wait(memberGate(plan.GateMemberReady, plan.Before, m.Name, m.Name+" is ready"))
		case m.Role == live.RoleLearner:
			r.wait(memberGate(plan.GateMemberVoter, plan.Before, m.Name, "the runtime promotes learner "+m.Name+" once it has caught up"))
		case m.Role == live.RoleUnknown:
			r.wait(memberGate(plan.GateMemberReady, plan.Before, m.Name, "the runtime reports the role of "+m.Name))
		case m.Role == live.RoleRemoved && (i != len(obs.Members)-1 || obs.StatefulSet.Replicas != i+1):
			r.wait(memberGate(plan.GateMemberRemoved, plan.Before, m.Name, m.Name+" left the membership but is not the highest member; re-add it or remove the pod by hand"))
		case m.Role == live.RoleLeader:
			leaders++
		}
	}
	if len(r.Waiting) == 0 && leaders != 1 {
		r.wait(gate(plan.GateClusterHealthy, plan.Before, "the cluster has exactly one leader"))
	}
	if len(r.Waiting) == 0 {
		clusterVersionWait(r, obs)
	}
	return len(r.Waiting) > 0
}

// clusterVersionWait waits while etcd has not yet raised its cluster
// version to the minor every member runs (it does so shortly after the
// last member of a minor upgrade restarts).
func clusterVersionWait(r *Result, obs *live.Cluster) {
	if obs.ClusterVersion == "" || len(obs.Members) == 0 || etcdDowngradeUnderway(obs) {
		return
	}
	cv, err := spec.ParseRelease(obs.ClusterVersion, 2)
	if err != nil {
		r.wait(gate(plan.GateClusterVersion, plan.Before, fmt.Sprintf("etcd reports a cluster version cairn can read (it reports %q)", obs.ClusterVersion)))
		return
	}
	low, _ := spec.ParseRelease(obs.Members[0].Version, 3)
	for _, m := range obs.Members[1:] {
		if v, _ := spec.ParseRelease(m.Version, 3); v.Compare(low) < 0 {
			low = v
		}
	}
	if cv.Major == low.Major && cv.Minor < low.Minor {
		want := minorOf(low)
		r.wait(plan.Gate{Kind: plan.GateClusterVersion, Version: want, Description: "etcd raises its cluster version from " + obs.ClusterVersion + " to " + want})
	}
}

// etcdFinish plans what finishes a half-applied change: the StatefulSet
// shrink after a member left, and the rest of a rolling upgrade. It fills
// the model from what remains.
//
// When reverting (etcdReverting), the members the upgrade moved go back
// first, one at a time from the highest: the revert does not first finish
// what it reverts.
func etcdFinish(r *Result, obs *live.Cluster, m *etcdModel, reverting bool) {
	members := obs.Members
	if n := len(members); n > 0 && members[n-1].Role == live.RoleRemoved {
		last := members[n-1]
		r.add(etcdScaleIn(m.name, last.Ordinal()))
		members = members[:n-1]
	}
	m.size = len(members)
	for _, mem := range members {
		if mem.Role == live.RoleLeader {
			m.leader = mem.Ordinal()
		}
	}
	target := m.version.String()
	k := min(obs.StatefulSet.UpdatePartition, m.size)
	if reverting {
		for ord := m.size - 1; ord >= k; ord-- {
			if from := members[ord].Version; from != target {
				fv, _ := spec.ParseRelease(from, 3)
				r.add(etcdUpgradeStep(m, ord, fv, m.version, stepOpts{}))
			}
		}
		return
	}
	for ord := k - 1; ord >= 0; ord-- {
		from := members[ord].Version
		if from == target {
			continue
		}
		fv, _ := spec.ParseRelease(from, 3)
		up := fv.Compare(m.version) < 0
		r.add(etcdUpgradeStep(m, ord, fv, m.version, stepOpts{lastOfMinor: up && ord == 0 && !fv.SameMinor(m.version)}))
	}
}

// etcdReverting: a rolling upgrade is under way (the partition above 0)
// and the spec names the version every member below the partition still
// runs: the same minor, or the minor before while etcd has not raised its
// cluster version; or, a downgrade being reverted (etcdDowngradeRevert),
// the minor after the template's while the cluster version is still the
// template's. The members at or above the partition run the template's
// version, or are restarting to the spec's.
func etcdReverting(obs *live.Cluster, want spec.Version) bool {
	if obs == nil || obs.StatefulSet.Version == "" {
		return false
	}
	t, err := spec.ParseRelease(obs.StatefulSet.Version, 3)
	k := min(obs.StatefulSet.UpdatePartition, len(obs.Members))
	switch {
	case err != nil || k == 0 || t == want || t.Major != want.Major:
		return false
	case !t.SameMinor(want) && (t.Minor != want.Minor+1 || obs.ClusterVersion != minorOf(want)) && !etcdDowngradeRevert(obs, t, want):
		return false
	}
	for i, m := range obs.Members {
		switch {
		case i < k && m.Version != want.String():
			return false
		case i >= k && m.Version != t.String() && m.Version != want.String():
			return false
		}
	}
	return true
}

// upgradeSize is the size at which to run an upgrade: the smaller of the
// two sizes, unless that is below safe (where a restart disrupts clients)
// and the larger one is not.
func upgradeSize(cur, want, safe int) int {
	at := min(cur, want)
	if at < safe && max(cur, want) >= safe {
		return safe
	}
	return at
}

// etcdResize changes membership one member at a time: learners join at
// the top, members leave from the top.
func etcdResize(r *Result, m *etcdModel, target int) {
	for m.size < target {
		r.add(etcdAddStep(m, m.size))
		m.size++
	}
	for m.size > target {
		ord := m.size - 1
		name := contract.MemberName(m.name, ord)
		leads := m.leader == ord
		canMove := m.version.Compare(spec.Version{Major: 3, Minor: 3}) >= 0
		summary := fmt.Sprintf("Remove %s from the etcd membership (%d -> %d voters)", name, m.size, m.size-1)
		switch {
		case leads && canMove:
			summary += "; it leads, so the runtime moves leadership to another member first"
		case leads:
			summary += fmt.Sprintf("; it leads and etcd %s cannot move leadership, so a new leader is elected after the removal (about one election timeout without writes)", m.version)
		}
		r.add(plan.Step{
			ID:         fmt.Sprintf("etcd-remove-%d", ord),
			Kind:       plan.EtcdRemoveMember,
			Summary:    summary,
			Disruptive: leads && !canMove,
			Reversible: true,
			Rollback:   fmt.Sprintf("Raise spec.size again: %s rejoins as a new learner with an empty data directory.", name),
			Gates: []plan.Gate{healthyBelow(target),
				memberGate(plan.GateNotLeader, plan.After, name, "leadership is on another member"),
				memberGate(plan.GateMemberRemoved, plan.After, name, name+" is no longer a member")},
			Params: plan.Params{EtcdRemoveMember: &plan.EtcdRemoveMemberParams{Member: name, Ordinal: ord, TransferLeadership: leads && canMove}},
		})
		r.add(etcdScaleIn(m.name, ord))
		if leads {
			m.leader = -1
		}
		m.size--
	}
}

// etcdAddStep adds the member at ordinal ord. etcd 3.4+ adds it as a
// learner, which does not vote until the runtime promotes it; older etcd
// adds a voter, and growing a one-member cluster then has no quorum until
// the new member has started.
func etcdAddStep(m *etcdModel, ord int) plan.Step {
	name := contract.MemberName(m.name, ord)
	learner := m.version.Compare(spec.Version{Major: 3, Minor: 4}) >= 0
	s := plan.Step{
		ID:         fmt.Sprintf("etcd-add-%d", ord),
		Kind:       plan.EtcdAddMember,
		Summary:    fmt.Sprintf("Add %s as a learner at %s (%d -> %d members); the runtime promotes it once it has caught up", name, m.version, ord, ord+1),
		Reversible: true,
		Rollback:   fmt.Sprintf("Lower spec.size again: the runtime removes %s from the membership, then the StatefulSet shrinks.", name),
		Gates: []plan.Gate{healthyBefore(),
			memberGate(plan.GateMemberReady, plan.After, name, name+" is ready"),
			memberGate(plan.GateMemberVoter, plan.After, name, name+" caught up and was promoted to a voter"),
			healthyAfter()},
		Params: plan.Params{EtcdAddMember: &plan.EtcdAddMemberParams{Member: name, Ordinal: ord, Replicas: ord + 1, Learner: learner}},
	}
	if !learner {
		s.Summary = fmt.Sprintf("Add %s as a voting member at %s (%d -> %d members; etcd before 3.4 has no learners)", name, m.version, ord, ord+1)
		s.Gates[2] = memberGate(plan.GateMemberVoter, plan.After, name, name+" is a voting member")
		if ord == 1 {
			s.Disruptive = true
			s.Summary += "; writes stop until it has started, as two voters need both for quorum"
		}
	}
	return s
}

func etcdScaleIn(cluster string, ord int) plan.Step {
	name := contract.MemberName(cluster, ord)
	return plan.Step{
		ID:         fmt.Sprintf("scale-in-%d", ord),
		Kind:       plan.ScaleIn,
		Summary:    fmt.Sprintf("Shrink the StatefulSet to %s, deleting %s, which has left the membership", pods(ord), name),
		Reversible: true,
		Rollback:   "Raise spec.size again; the pod comes back and joins as a new learner.",
		Gates: []plan.Gate{memberGate(plan.GateMemberRemoved, plan.Before, name, name+" is no longer a member"),
			gate(plan.GateStatefulSetSettled, plan.After, "the StatefulSet runs "+pods(ord))},
		Params: plan.Params{ScaleIn: &plan.ScaleInParams{Member: name, Ordinal: ord, Replicas: ord}},
	}
}

// etcdUpgrade rolls every member through each version of path, one member
// at a time from the highest ordinal down. The last member of a minor hop
// cannot be undone (etcd raises its cluster version), so a minor hop
// starts with a snapshot (a TakeBackup step) and its last member is gated
// on a fresh one; without spec.backup it is refused. A minor hop already
// under way, whose rest etcdFinish planned, gets the same (etcdInFlightBackup).
func etcdUpgrade(r *Result, c *spec.EtcdCluster, obs *live.Cluster, m *etcdModel, path []spec.Version) {
	if !etcdInFlightBackup(r, c, obs) {
		return
	}
	for hop, to := range path {
		from := m.version
		var backupID string
		if !from.SameMinor(to) {
			id, take, ok := etcdHopBackup(r, c, obs, m.size, from, to)
			if !ok {
				return
			}
			if take != nil {
				r.add(*take)
			}
			backupID = id
		}
		for ord := m.size - 1; ord >= 0; ord-- {
			opts := stepOpts{
				firstOfHop:  ord == m.size-1 && (hop > 0 || !from.SameMinor(to)),
				lastOfMinor: ord == 0 && !from.SameMinor(to),
				backup:      backupID,
			}
			r.add(etcdUpgradeStep(m, ord, from, to, opts))
		}
		m.version = to
	}
}

// etcdHopBackup is the snapshot the minor hop from -> to relies on: its
// request ID, and the TakeBackup step that asks for it unless the runtime
// served it and it is still fresh. ok is false when the hop is refused.
// The step is held for the maintenance window when the hop's restarts are
// (fewer than 3 members).
func etcdHopBackup(r *Result, c *spec.EtcdCluster, obs *live.Cluster, size int, from, to spec.Version) (string, *plan.Step, bool) {
	if c.Spec.Backup == nil {
		r.refuse(RuleEtcdMinorNeedsBackup, "spec.backup", "the etcd upgrade from %s to %s ends in a step that cannot be undone (etcd raises its cluster version to %s) and is gated on a fresh snapshot; configure spec.backup first",
			minorOf(from), minorOf(to), minorOf(to))
		return "", nil, false
	}
	id, taken := preStepBackup(obs.Backup, "backup-before-"+to.String())
	refuseShorterRetention(r, id, fmt.Sprintf("the etcd upgrade from %s to %s", minorOf(from), minorOf(to)))
	if taken {
		return id, nil, true
	}
	summary := fmt.Sprintf("Take an etcd snapshot now, before the upgrade from %s to %s, whose last member cannot be undone", minorOf(from), minorOf(to))
	s := takeBackupStep(c, id, summary, fmt.Sprintf("etcd upgrade from %s to %s", from, to), size < 3)
	return id, &s, true
}

// etcdInFlightBackup gives the irreversible last member of a minor hop
// under way (planned by etcdFinish) the snapshot it relies on: a
// TakeBackup step right before it, unless the runtime served one that is
// still fresh. A configure-backup step planned after it moves before the
// TakeBackup step: the runtime serves requests only under a backup
// policy. It returns false when the hop is refused.
func etcdInFlightBackup(r *Result, c *spec.EtcdCluster, obs *live.Cluster) bool {
	i := slices.IndexFunc(r.Steps, func(s plan.Step) bool { return s.Kind == plan.UpgradeMember && !s.Reversible })
	if i < 0 {
		return true
	}
	u := r.Steps[i].Params.UpgradeMember
	from, ferr := spec.ParseRelease(u.From, 3)
	to, terr := spec.ParseRelease(u.To, 3)
	if ferr != nil || terr != nil {
		return true // etcdCurrentVersion refused what it cannot read
	}
	id, take, ok := etcdHopBackup(r, c, obs, u.Replicas, from, to)
	if !ok {
		return false
	}
	r.Steps[i].Rollback = etcdLastOfMinorRollback(from, to, id)
	if take == nil {
		return true
	}
	if cb := slices.IndexFunc(r.Steps, func(s plan.Step) bool { return s.Kind == plan.ConfigureBackup }); cb > i {
		s := r.Steps[cb]
		r.Steps = slices.Insert(slices.Delete(r.Steps, cb, cb+1), i, s)
		i++
	}
	insertStep(r, i, *take)
	return true
}

type stepOpts struct {
	firstOfHop  bool // starts a minor hop: the cluster version must be the previous minor
	lastOfMinor bool // completes a minor upgrade: etcd raises its cluster version
	// backup is the TakeBackup step whose snapshot the last member's
	// rollback restores; empty when the caller does not know it.
	backup string
}

func etcdUpgradeStep(m *etcdModel, ord int, from, to spec.Version, o stepOpts) plan.Step {
	name := contract.MemberName(m.name, ord)
	s := plan.Step{
		ID:         fmt.Sprintf("upgrade-%d-to-%s", ord, to),
		Kind:       plan.UpgradeMember,
		Summary:    fmt.Sprintf("%s %s from %s to %s (StatefulSet partition %d)", moveVerb(from, to), name, from, to, ord),
		Disruptive: m.size < 3,
		Reversible: !o.lastOfMinor,
		Rollback:   fmt.Sprintf("Set spec.version back to %s while etcd still reports cluster version %s: cairn moves the members that run %s back, one at a time; etcd runs mixed versions until every member has moved.", from, minorOf(from), to),
		Gates:      []plan.Gate{healthyBefore()},
		Params: plan.Params{UpgradeMember: &plan.UpgradeMemberParams{
			Member: name, Ordinal: ord, From: from.String(), To: to.String(), Partition: ord, Replicas: m.size,
		}},
	}
	if m.size < 3 {
		s.Summary += fmt.Sprintf("; with %d member(s) the restart stops the cluster until it is back", m.size)
	}
	if o.firstOfHop {
		s.Gates = append(s.Gates, plan.Gate{Kind: plan.GateClusterVersion, When: plan.Before, Version: minorOf(from),
			Description: "etcd reports cluster version " + minorOf(from)})
	}
	if o.lastOfMinor {
		s.Gates = append(s.Gates, freshBackupGate())
	}
	s.Gates = append(s.Gates,
		plan.Gate{Kind: plan.GateMemberVersion, When: plan.After, Member: name, Version: to.String(), Description: name + " runs " + to.String()},
		memberGate(plan.GateMemberReady, plan.After, name, name+" is ready"),
		healthyAfter())
	if o.lastOfMinor {
		s.Rollback = etcdLastOfMinorRollback(from, to, o.backup)
		s.Gates = append(s.Gates, plan.Gate{Kind: plan.GateClusterVersion, When: plan.After, Version: minorOf(to),
			Description: "etcd reports cluster version " + minorOf(to)})
	}
	return s
}

// etcdLastOfMinorRollback is the rollback of the last member of a minor
// hop: none but a restore of the snapshot from step backup.
func etcdLastOfMinorRollback(from, to spec.Version, backup string) string {
	snapshot := "a snapshot taken before this step into a new cluster"
	if backup != "" {
		snapshot = fmt.Sprintf("the snapshot from step %s into a new cluster at %s; the runtime keeps that snapshot pinned, whatever the retention, until it is released with cairn backup release", backup, minorOf(from))
	}
	return fmt.Sprintf("Not reversible: with every member at %s etcd raises its cluster version to %s and %s members can no longer join. Going back means restoring %s", to, minorOf(to), minorOf(from), snapshot) +
		etcdDowngradeInstead(from, to) + "."
}

func minorOf(v spec.Version) string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }
