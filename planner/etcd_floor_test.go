package planner

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// halfApplied is a 3-member cluster "e" whose StatefulSet template is at
// template with the update partition at 2: e-2 runs the template, e-0 and
// e-1 still run member.
func halfApplied(member, template string) *live.Cluster {
	return with(etcdLive(3, member, 0), func(c *live.Cluster) {
		c.StatefulSet.Version, c.StatefulSet.UpdatePartition = template, 2
		c.Members[2].Version = template
	})
}

// wantRefusal checks the one refusal's message names each of says.
func wantRefusal(says ...string) func(t *testing.T, p plan.Plan) {
	return func(t *testing.T, p plan.Plan) {
		t.Helper()
		if len(p.Refusals) != 1 {
			t.Fatalf("refusals = %v, want one", p.Refusals)
		}
		for _, s := range says {
			if !strings.Contains(p.Refusals[0].Reason, s) {
				t.Errorf("refusal %q does not say %q", p.Refusals[0].Reason, s)
			}
		}
	}
}

// A rolling upgrade to the next minor found half-way, with members still
// below the floor etcd requires before that minor, is never finished: it
// was started by hand, or planned under an older, lower floor.
func TestEtcdHalfAppliedUpgradeAcrossTheFloor(t *testing.T) {
	f5, ok := spec.EtcdUpgradeFloor(spec.Version{Major: 3, Minor: 5})
	if !ok {
		t.Fatal("etcd 3.5 has no upgrade floor")
	}
	f6, ok := spec.EtcdUpgradeFloor(spec.Version{Major: 3, Minor: 6})
	if !ok {
		t.Fatal("etcd 3.6 has no upgrade floor")
	}
	below6 := spec.Version{Major: 3, Minor: 6, Patch: f6.Floor.Patch - 1}.String()
	wayOut5 := []string{f5.Floor.String(), f5.Source, "back to " + f5.Newest.String() + " by hand", "revert the pull request"}
	runCases(t, []planCase{
		{
			name: "started by hand from 3.5.21: refused, naming the floor, its source and the way out", desired: etcdSpec(t, 3, "3.6.16"),
			observed: halfApplied("3.5.21", "3.6.16"),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdUpgradeFloor},
			check: wantRefusal(append([]string{"member e-0 runs 3.5.21", "template 3.6.16", "to 3.6 only from"}, wayOut5...)...),
		},
		{
			name: "planned under the older 3.5.26 floor: refused", desired: etcdSpec(t, 3, "3.6.16"),
			observed: halfApplied("3.5.26", "3.6.16"),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdUpgradeFloor},
			check: wantRefusal(wayOut5...),
		},
		{
			name: "no member moved yet: the template alone is ahead, refused", desired: etcdSpec(t, 3, "3.6.16"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.StatefulSet.Version, c.StatefulSet.UpdatePartition = "3.6.16", 3 }),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdUpgradeFloor},
		},
		{
			name: "the spec already set back to 3.5: the template is still ahead, refused", desired: etcdSpec(t, 3, f5.Newest.String()),
			observed: halfApplied("3.5.21", "3.6.16"),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdUpgradeFloor},
		},
		{
			name: "refused even while a member is down: nothing is planned across the floor", desired: etcdSpec(t, 3, "3.6.16"),
			observed: with(halfApplied("3.5.21", "3.6.16"), func(c *live.Cluster) { c.Members[1].Ready = false }),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdUpgradeFloor},
		},
		{
			name: "3.6 below its floor with the template at 3.7: refused", desired: etcdSpec(t, 3, "3.7.3"),
			observed: halfApplied(below6, "3.7.3"),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdUpgradeFloor},
			check: wantRefusal("to 3.7 only from "+f6.Floor.String(), f6.Source, "back to "+f6.Newest.String()),
		},
		{
			name: "members at the floor: the upgrade is finished", desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup),
			observed: etcdBacked(halfApplied(f5.Floor.String(), "3.6.16"), ""),
			status:   plan.StatusPlanned, steps: []string{"upgrade-1-to-3.6.16", "backup-before-3.6.16", "upgrade-0-to-3.6.16"},
			check: func(t *testing.T, p plan.Plan) {
				if p.Steps[2].Reversible {
					t.Error("the last member of a minor hop is irreversible")
				}
			},
		},
		{
			name: "members at the newest 3.5: the upgrade is finished", desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup),
			observed: etcdBacked(halfApplied(f5.Newest.String(), "3.6.16"), ""),
			status:   plan.StatusPlanned, steps: []string{"upgrade-1-to-3.6.16", "backup-before-3.6.16", "upgrade-0-to-3.6.16"},
		},
		{
			name: "3.4 names no floor: a half-done move to 3.5 is finished", desired: etcdSpec(t, 3, f5.Newest.String(), withEtcdBackup),
			observed: etcdBacked(halfApplied("3.4.20", f5.Newest.String()), ""),
			status:   plan.StatusPlanned, steps: []string{"upgrade-1-to-" + f5.Newest.String(), "backup-before-" + f5.Newest.String(), "upgrade-0-to-" + f5.Newest.String()},
		},
		{
			name: "the way out: the template set back to the newest 3.5 by hand; the members reach it, then 3.6", desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup),
			observed: etcdBacked(halfApplied("3.5.21", f5.Newest.String()), ""),
			status:   plan.StatusPlanned,
			steps: []string{
				"upgrade-1-to-" + f5.Newest.String(), "upgrade-0-to-" + f5.Newest.String(),
				"backup-before-3.6.16", "upgrade-2-to-3.6.16", "upgrade-1-to-3.6.16", "upgrade-0-to-3.6.16",
			},
		},
		{
			name: "the way out: the pull request reverted; cairn plans the newest 3.5, then 3.6", desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup),
			observed: etcdBacked(etcdLive(3, "3.5.21", 0), ""),
			status:   plan.StatusPlanned,
			steps: []string{
				"upgrade-2-to-" + f5.Newest.String(), "upgrade-1-to-" + f5.Newest.String(), "upgrade-0-to-" + f5.Newest.String(),
				"backup-before-3.6.16", "upgrade-2-to-3.6.16", "upgrade-1-to-3.6.16", "upgrade-0-to-3.6.16",
			},
		},
	})
}
