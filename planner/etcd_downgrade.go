package planner

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// An etcd minor downgrade, from etcd 3.6 on, goes through etcd's own
// protocol (etcd.io/docs/v3.7/downgrades/downgrade_3_7): a person asks
// for the minor before the one every member runs; cairn plans
//
//   - a snapshot first when spec.backup is set (etcd's guide takes one
//     before it starts; nothing in a downgrade depends on it, see below);
//   - an EtcdDowngrade step: the runtime validates and enables the
//     downgrade, and etcd lowers its cluster version to the target minor
//     at once and migrates every member's storage to it;
//   - one member step per member, highest ordinal first, each lowering
//     the StatefulSet's partition with the older image, as an upgrade
//     does. Once every member runs the target minor, etcd ends the
//     downgrade itself.
//
// Every step can be undone: until the last member moves, setting
// spec.version back makes cairn cancel the downgrade (an EtcdDowngrade
// cancel step) and move the members that moved back up; after it, going
// back is an ordinary upgrade. So no step needs a snapshot, and a
// downgrade is planned without spec.backup.

// downgradeFloorMinor is the oldest minor a downgrade starts from: etcd
// has its downgrade protocol from 3.6 on (3.6 -> 3.5).
const downgradeFloorMinor = 6

// etcdDowngradeAsked reports whether the spec asks for an etcd downgrade
// cairn plans: every member at minor N (cur, 3.6 or later) and the spec at
// minor N-1. It refuses what it cannot plan (more than one minor, a
// target below its line's upgrade floor); a downgrade from before 3.6 is
// left to the caller's refusal.
func etcdDowngradeAsked(r *Result, c *spec.EtcdCluster, obs *live.Cluster, cur spec.Version) bool {
	want := c.Spec.Version.Parse()
	if want.Major != cur.Major || want.Minor >= cur.Minor || cur.Minor < downgradeFloorMinor {
		return false
	}
	for _, m := range obs.Members {
		if v, err := spec.ParseRelease(m.Version, 3); err != nil || !v.SameMinor(cur) {
			return false // not every member at minor N: etcdCurrentVersion's case
		}
	}
	if want.Minor < cur.Minor-1 {
		r.refuse(RuleEtcdDowngrade, "spec.version",
			"etcd downgrades one minor version at a time; the cluster runs %s: set spec.version to a 3.%d release first, then to %s once every member runs it",
			cur, cur.Minor-1, want)
		return true
	}
	if f, ok := spec.EtcdUpgradeFloor(want); ok && want.Compare(f.Floor) < 0 {
		r.refuse(RuleEtcdDowngrade, "spec.version",
			"a downgrade to %s would leave the cluster below %s, the lowest %s etcd supports upgrading to %s from (%s); etcd's downgrade guide asks for the latest %s release: use %s",
			want, f.Floor, minorOf(want), minorOf(cur), f.Source, minorOf(want), f.Newest)
		return true
	}
	return true
}

// etcdDowngrade plans what a downgrade needs besides the members that
// etcdFinish moves: the cancel of a downgrade the spec no longer asks
// for; when down, the snapshot, the EtcdDowngrade step and the member
// steps; and the downgrade flavour (IDs, texts, gates) of the member
// steps etcdFinish planned while a downgrade is enabled.
func etcdDowngrade(r *Result, c *spec.EtcdCluster, obs *live.Cluster, m *etcdModel, down bool) {
	want := c.Spec.Version.Parse()
	target, on := obs.DowngradeEnabled()
	if on && target != minorOf(want) {
		insertStep(r, 0, etcdDowngradeCancel(target, minorOf(want)))
	}
	if on {
		for i, s := range r.Steps {
			u := s.Params.UpgradeMember
			if s.Kind != plan.UpgradeMember || u == nil {
				continue
			}
			from, ferr := spec.ParseRelease(u.From, 3)
			to, terr := spec.ParseRelease(u.To, 3)
			if ferr == nil && terr == nil && minorOf(to) == target && from.Minor == to.Minor+1 {
				r.Steps[i] = etcdDowngradeStep(m, u.Ordinal, from, to, u.Ordinal == 0)
			}
		}
	}
	if !down {
		return
	}
	from := m.version
	if !on {
		if c.Spec.Backup != nil {
			id, taken := preStepBackup(obs.Backup, "backup-before-downgrade-to-"+want.String())
			if !taken {
				r.add(takeBackupStep(c, id, fmt.Sprintf("Take an etcd snapshot now, before the downgrade from %s to %s, as etcd's downgrade guide does (no step of the downgrade needs it to be undone)",
					minorOf(from), minorOf(want)), fmt.Sprintf("etcd downgrade from %s to %s", from, want), false))
			}
		}
		r.add(etcdDowngradeEnable(m, from, want, c.Spec.Backup != nil))
	}
	for ord := m.size - 1; ord >= 0; ord-- {
		r.add(etcdDowngradeStep(m, ord, from, want, ord == 0))
	}
	m.version = want
}

// etcdDowngradeEnable is the step whose merge asks the runtime to enable
// the downgrade from minor from to want's.
func etcdDowngradeEnable(m *etcdModel, from, want spec.Version, backedUp bool) plan.Step {
	fm, tm := minorOf(from), minorOf(want)
	summary := fmt.Sprintf("Enable etcd's downgrade from %s to %s: the runtime validates it and asks etcd to enable it; etcd lowers its cluster version to %s at once (the %s features are off from then on) and migrates every member's storage to %s, and no member restarts",
		fm, tm, tm, fm, tm)
	if !backedUp {
		summary += "; no snapshot is taken first (spec.backup is not set; etcd's downgrade guide takes one)"
	}
	return plan.Step{
		ID:         "etcd-downgrade-to-" + tm,
		Kind:       plan.EtcdDowngrade,
		Summary:    summary,
		Reversible: true,
		Rollback: fmt.Sprintf("Set spec.version back to %s: cairn plans a step that cancels the downgrade, and etcd raises its cluster version to %s again once every member runs %s. Reverting this pull request alone does not cancel it: the runtime has already asked etcd, and the request is not asked again.",
			from, fm, fm),
		Gates: []plan.Gate{healthyBefore(),
			{Kind: plan.GateClusterVersion, When: plan.Before, Version: fm, Description: "etcd reports cluster version " + fm},
			{Kind: plan.GateEtcdDowngrade, When: plan.After, Version: tm, Description: fmt.Sprintf("etcd reports the downgrade to %s enabled and every member's storage at %s", tm, tm)},
			{Kind: plan.GateClusterVersion, When: plan.After, Version: tm, Description: "etcd reports cluster version " + tm},
		},
		Params: plan.Params{EtcdDowngrade: &plan.EtcdDowngradeParams{Action: contract.EtcdDowngradeEnable, From: fm, To: tm}},
	}
}

// etcdDowngradeCancel is the step whose merge asks the runtime to cancel
// the downgrade to minor target: the spec asks for minor want.
func etcdDowngradeCancel(target, want string) plan.Step {
	return plan.Step{
		ID:   "etcd-downgrade-cancel-" + target,
		Kind: plan.EtcdDowngrade,
		Summary: fmt.Sprintf("Cancel etcd's downgrade to %s (the spec asks for %s again): the runtime asks etcd to cancel it; etcd raises its cluster version to %s once every member runs %s, and the steps after this one move the members that run %s back",
			target, want, want, want, target),
		Reversible: true,
		Rollback:   fmt.Sprintf("Set spec.version to a %s release again: cairn enables the downgrade anew.", target),
		Gates: []plan.Gate{healthyBefore(),
			{Kind: plan.GateEtcdDowngrade, When: plan.After, Description: "etcd reports no downgrade enabled"}},
		Params: plan.Params{EtcdDowngrade: &plan.EtcdDowngradeParams{Action: contract.EtcdDowngradeCancel, From: target, To: want}},
	}
}

// etcdDowngradeStep moves the member at ord from from to to while etcd's
// downgrade to to's minor is enabled; last is the member after which
// every member runs it and etcd ends the downgrade.
func etcdDowngradeStep(m *etcdModel, ord int, from, to spec.Version, last bool) plan.Step {
	name := contract.MemberName(m.name, ord)
	fm, tm := minorOf(from), minorOf(to)
	s := plan.Step{
		ID:         fmt.Sprintf("downgrade-%d-to-%s", ord, to),
		Kind:       plan.UpgradeMember,
		Summary:    fmt.Sprintf("Downgrade %s from %s to %s (StatefulSet partition %d); etcd's downgrade to %s is enabled, so it rejoins at %s", name, from, to, ord, tm, tm),
		Disruptive: m.size < 3,
		Reversible: true,
		Rollback: fmt.Sprintf("Set spec.version back to %s while a member still runs %s: cairn cancels the downgrade and moves the members that run %s back to %s, one at a time; etcd raises its cluster version to %s once they all do.",
			from, fm, tm, from, fm),
		Gates: []plan.Gate{healthyBefore(),
			{Kind: plan.GateEtcdDowngrade, When: plan.Before, Version: tm, Description: fmt.Sprintf("etcd reports the downgrade to %s enabled and every member's storage at %s", tm, tm)},
			{Kind: plan.GateMemberVersion, When: plan.After, Member: name, Version: to.String(), Description: name + " runs " + to.String()},
			memberGate(plan.GateMemberReady, plan.After, name, name+" is ready"),
			healthyAfter()},
		Params: plan.Params{UpgradeMember: &plan.UpgradeMemberParams{
			Member: name, Ordinal: ord, From: from.String(), To: to.String(), Partition: ord, Replicas: m.size,
		}},
	}
	if m.size < 3 {
		s.Summary += fmt.Sprintf("; with %d member(s) the restart stops the cluster until it is back", m.size)
	}
	if last {
		s.Summary += fmt.Sprintf("; with it every member runs %s and etcd ends the downgrade", tm)
		s.Rollback = fmt.Sprintf("With every member at %s etcd has ended the downgrade: going back is an upgrade to %s, which cairn plans when spec.version is set back to %s (its last member then cannot be undone but by a downgrade).",
			tm, fm, from)
		s.Gates = append(s.Gates,
			plan.Gate{Kind: plan.GateClusterVersion, When: plan.After, Version: tm, Description: "etcd reports cluster version " + tm},
			plan.Gate{Kind: plan.GateEtcdDowngrade, When: plan.After, Description: "etcd ended the downgrade"})
	}
	return s
}

// etcdDowngradeRevert reports whether a downgrade from want's minor to the
// template's t is being reverted: the spec asks for the minor above the
// template's again while etcd's cluster version is still t's (members
// that did not move run want's minor). The members that moved go back up.
func etcdDowngradeRevert(obs *live.Cluster, t, want spec.Version) bool {
	return t.Major == want.Major && t.Minor+1 == want.Minor && want.Minor >= downgradeFloorMinor && obs.ClusterVersion == minorOf(t)
}

// etcdDowngradeInstead is what an upgrade's irreversible last member adds
// to its rollback when etcd can downgrade from to (3.6 and later).
func etcdDowngradeInstead(from, to spec.Version) string {
	if to.Minor < downgradeFloorMinor {
		return ""
	}
	return fmt.Sprintf(", or, with etcd's downgrade (from 3.6 on), setting spec.version back to a %s release once this step is done: cairn then plans the downgrade, member by member, with no restore", minorOf(from))
}

// etcdDowngradingTo reports whether etcd has the downgrade to t's minor
// enabled.
func etcdDowngradingTo(obs *live.Cluster, t spec.Version) bool {
	target, on := obs.DowngradeEnabled()
	return on && target == minorOf(t)
}

// etcdDowngradeUnderway reports whether etcd has a downgrade enabled: the
// cluster version is lowered on purpose, and no wait for etcd to raise it
// applies.
func etcdDowngradeUnderway(obs *live.Cluster) bool {
	_, on := obs.DowngradeEnabled()
	return on
}
