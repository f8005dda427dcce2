package planner

import (
	"fmt"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// revertedPR is a cluster of n members at from whose rolling upgrade to
// to moved the members from ordinal moved up, and whose rendered template
// was then set back to from with the partition at partition: the step's
// pull request reverted (the partition back where it was before), or the
// template set back by hand (the partition left). etcd still reports
// cluster version cv.
func revertedPR(n int, from, to string, moved, partition int, cv string) *live.Cluster {
	return with(etcdBacked(etcdLive(n, from, 0), ""), func(c *live.Cluster) {
		c.StatefulSet.UpdatePartition, c.ClusterVersion = partition, cv
		for i := moved; i < n; i++ {
			c.Members[i].Version = to
		}
	})
}

// statefulSetRolls plays the StatefulSet controller: the members at or
// above the partition restart at the template's version.
func statefulSetRolls(c *live.Cluster) *live.Cluster {
	c = clone(c)
	for i := c.StatefulSet.UpdatePartition; i < len(c.Members); i++ {
		c.Members[i].Version = c.StatefulSet.Version
	}
	return c
}

// The way out a refusal advises ("revert the pull request that raised
// it", "set the template back by hand") is planned when a person takes
// it: a member one minor ahead of the template, while etcd still reports
// the template's cluster version, never ran the newer minor's data
// format and moves back; only a raised (or unknown) cluster version makes
// it a downgrade.
func TestEtcdRevertedStepIsPlanned(t *testing.T) {
	f5, _ := spec.EtcdUpgradeFloor(spec.Version{Major: 3, Minor: 5})
	f6, _ := spec.EtcdUpgradeFloor(spec.Version{Major: 3, Minor: 6})
	new5, new6 := f5.Newest.String(), f6.Newest.String()
	below6 := spec.Version{Major: 3, Minor: 5, Patch: f6.Floor.Patch - 1}
	runCases(t, []planCase{
		{name: "the first step's pull request reverted (3.5 -> 3.6): the StatefulSet moves e-2 back, cairn waits for it",
			desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup), observed: revertedPR(3, new5, "3.6.16", 2, 0, "3.5"),
			status: plan.StatusWaiting, waiting: "e-2 restarts at " + new5},
		{name: "the upgrade across the floor reverted, as its refusal advises: waits, not refused",
			desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup), observed: revertedPR(3, below6.String(), "3.6.16", 2, 0, "3.5"),
			status: plan.StatusWaiting, waiting: "e-2 restarts at " + below6.String()},
		{name: "the template set back by hand, the partition left at 1: two members move back",
			desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup), observed: revertedPR(3, below6.String(), "3.6.16", 1, 1, "3.5"),
			status: plan.StatusWaiting, waiting: "e-1 restarts at " + below6.String()},
		{name: "3.4 -> 3.5 reverted on five members",
			desired: etcdSpec(t, 5, new5, withEtcdBackup), observed: revertedPR(5, "3.4.37", new5, 3, 0, "3.4"),
			status: plan.StatusWaiting, waiting: "e-3 restarts at 3.4.37"},
		{name: "3.6 -> 3.7 reverted, the spec set back too",
			desired: etcdSpec(t, 3, new6, withEtcdBackup), observed: revertedPR(3, new6, "3.7.3", 2, 0, "3.6"),
			status: plan.StatusWaiting, waiting: "e-2 restarts at " + new6},
		{name: "the cluster version raised: every member ran the newer minor, a downgrade, refused",
			desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup), observed: revertedPR(3, new5, "3.6.16", 0, 0, "3.6"),
			status: plan.StatusRefused, refusals: []string{RuleEtcdDowngrade},
			check: wantRefusal("raised its cluster version to 3.6")},
		{name: "no cluster version reported: cairn cannot tell, refused and says why",
			desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup), observed: revertedPR(3, new5, "3.6.16", 2, 0, ""),
			status: plan.StatusRefused, refusals: []string{RuleEtcdDowngrade},
			check: wantRefusal("reports no cluster version")},
		{name: "two minors ahead is never a revert",
			desired: etcdSpec(t, 3, "3.7.3", withEtcdBackup), observed: revertedPR(3, new5, "3.7.3", 2, 0, "3.5"),
			status: plan.StatusRefused, refusals: []string{RuleEtcdDowngrade}},
	})
}

// From every point of a minor hop, a reverted step (the template back at
// the old version, the partition where it was or left) is waited for,
// and once the StatefulSet has moved the members back the plan converges,
// to the spec's newer version or to the old one if the spec is set back.
func TestEtcdRevertedStepConverges(t *testing.T) {
	f5, _ := spec.EtcdUpgradeFloor(spec.Version{Major: 3, Minor: 5})
	f6, _ := spec.EtcdUpgradeFloor(spec.Version{Major: 3, Minor: 6})
	hops := []struct{ from, to, cv string }{
		{"3.4.37", f5.Newest.String(), "3.4"},
		{f5.Newest.String(), "3.6.16", "3.5"},
		{"3.5.21", "3.6.16", "3.5"}, // below the 3.6 floor: how the floor refusal arises
		{f6.Newest.String(), "3.7.3", "3.6"},
	}
	for _, h := range hops {
		for _, n := range []int{1, 3, 5} {
			for moved := n - 1; moved >= 0; moved-- {
				for _, partition := range []int{0, moved} {
					for _, want := range []string{h.to, h.from} {
						name := fmt.Sprintf("%s->%s/%d members/%d moved/partition %d/spec %s", h.from, h.to, n, n-moved, partition, want)
						t.Run(name, func(t *testing.T) {
							obs := revertedPR(n, h.from, h.to, moved, partition, h.cv)
							desired := etcdSpec(t, n, want, withEtcdBackup)
							p := kinds.PlanCluster(desired, obs, nil)
							if p.Status != plan.StatusWaiting {
								t.Fatalf("status %s (refusals %v, steps %v), want waiting for the StatefulSet", p.Status, p.Refusals, stepIDs(p))
							}
							converge(t, convergenceCase{desired: desired, observed: statefulSetRolls(obs)})
						})
					}
				}
			}
		}
	}
}
