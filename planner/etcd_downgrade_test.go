package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// downgrading is a 3-member cluster "e" whose members run from, with
// etcd's downgrade to minor target enabled (cluster version lowered, the
// storage migrated) as the runtime reports it after request done.
func downgrading(from, target, done string) *live.Cluster {
	return with(etcdLive(3, from, 0), func(c *live.Cluster) {
		c.ClusterVersion = target
		c.Downgrade = &live.EtcdDowngrade{Enabled: true, Target: target, StorageMigrated: true, Done: done}
	})
}

// movedDown is downgrading with the template at to and the partition at
// k: the members at k and above run to.
func movedDown(from, to, target string, k int) *live.Cluster {
	return with(downgrading(from, target, "etcd-downgrade-to-"+target), func(c *live.Cluster) {
		c.StatefulSet.Version, c.StatefulSet.UpdatePartition = to, k
		for i := k; i < 3; i++ {
			c.Members[i].Version = to
		}
	})
}

func TestEtcdDowngrades(t *testing.T) {
	members := []string{"downgrade-2-to-3.6.16", "downgrade-1-to-3.6.16", "downgrade-0-to-3.6.16"}
	runCases(t, []planCase{
		{
			name: "3.7 to 3.6 with backups: a snapshot, the downgrade enabled, then one member at a time", desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup),
			observed: etcdBacked(with(etcdLive(3, "3.7.3", 0), func(c *live.Cluster) { c.ClusterVersion = "3.7" }), ""),
			status:   plan.StatusPlanned, steps: append([]string{"backup-before-downgrade-to-3.6.16", "etcd-downgrade-to-3.6"}, members...),
			check: func(t *testing.T, p plan.Plan) {
				enable := step(t, p, "etcd-downgrade-to-3.6")
				if d := enable.Params.EtcdDowngrade; d == nil || d.Action != contract.EtcdDowngradeEnable || d.From != "3.7" || d.To != "3.6" {
					t.Errorf("enable step params %+v", enable.Params)
				}
				if !hasGate(enable, plan.GateEtcdDowngrade, plan.After) || !enable.Reversible || !strings.Contains(enable.Rollback, "cancels the downgrade") {
					t.Errorf("enable step: gates %+v reversible %v rollback %q", enable.Gates, enable.Reversible, enable.Rollback)
				}
				for _, id := range members {
					s := step(t, p, id)
					if s.Kind != plan.UpgradeMember || !s.Reversible || !hasGate(s, plan.GateEtcdDowngrade, plan.Before) {
						t.Errorf("%s: kind %s reversible %v gates %+v", id, s.Kind, s.Reversible, s.Gates)
					}
				}
				last := step(t, p, members[2])
				if !hasGate(last, plan.GateClusterVersion, plan.After) || !strings.Contains(last.Rollback, "an upgrade to 3.7") {
					t.Errorf("the last member: gates %+v rollback %q", last.Gates, last.Rollback)
				}
			},
		},
		{
			name: "without spec.backup: planned all the same, and the step says no snapshot is taken", desired: etcdSpec(t, 3, "3.6.16"),
			observed: with(etcdLive(3, "3.7.3", 0), func(c *live.Cluster) { c.ClusterVersion = "3.7" }),
			status:   plan.StatusPlanned, steps: append([]string{"etcd-downgrade-to-3.6"}, members...),
			check: func(t *testing.T, p plan.Plan) {
				if s := p.Steps[0].Summary; !strings.Contains(s, "no snapshot is taken") {
					t.Errorf("summary %q", s)
				}
			},
		},
		{
			name: "3.6 to 3.5, at or above the 3.5 floor", desired: etcdSpec(t, 3, "3.5.35"),
			observed: etcdLive(3, "3.6.16", 0),
			status:   plan.StatusPlanned, steps: []string{"etcd-downgrade-to-3.5", "downgrade-2-to-3.5.35", "downgrade-1-to-3.5.35", "downgrade-0-to-3.5.35"},
		},
		{
			name: "3.6 to a 3.5 below its floor for 3.6 is refused, naming the newest", desired: etcdSpec(t, 3, "3.5.21"),
			observed: etcdLive(3, "3.6.16", 0),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdDowngrade},
			check: wantRefusal("3.5.32", "3.5.35", "latest 3.5"),
		},
		{
			name: "two minors at once is refused, one at a time", desired: etcdSpec(t, 3, "3.5.35"),
			observed: etcdLive(3, "3.7.3", 0),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdDowngrade},
			check: wantRefusal("one minor version at a time", "3.6 release first"),
		},
		{
			name: "below 3.6 etcd has no downgrade: refused as before", desired: etcdSpec(t, 3, "3.4.37"),
			observed: etcdLive(3, "3.5.35", 0),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdDowngrade},
			check: wantRefusal("downgrades across minor versions are not supported"),
		},
		{
			name: "enabled, no member moved: the members, and no wait for the cluster version", desired: etcdSpec(t, 3, "3.6.16"),
			observed: downgrading("3.7.3", "3.6", "etcd-downgrade-to-3.6"),
			status:   plan.StatusPlanned, steps: members,
		},
		{
			name: "the first member moved: the rest, as downgrade steps", desired: etcdSpec(t, 3, "3.6.16"),
			observed: movedDown("3.7.3", "3.6.16", "3.6", 2),
			status:   plan.StatusPlanned, steps: members[1:],
			check: func(t *testing.T, p plan.Plan) {
				if s := p.Steps[1]; !strings.Contains(s.Summary, "etcd ends the downgrade") || !hasGate(s, plan.GateEtcdDowngrade, plan.After) {
					t.Errorf("the last member: %q %+v", s.Summary, s.Gates)
				}
			},
		},
		{
			name: "a member restarting to 3.6 still reports 3.7: wait, not refused", desired: etcdSpec(t, 3, "3.6.16"),
			observed: with(movedDown("3.7.3", "3.6.16", "3.6", 2), func(c *live.Cluster) { c.Members[2].Version, c.Members[2].Ready = "3.7.3", false }),
			status:   plan.StatusWaiting, waiting: "e-2 restarts at 3.6.16",
		},
		{
			name: "every member moved and etcd ended the downgrade: converged", desired: etcdSpec(t, 3, "3.6.16"),
			observed: with(etcdLive(3, "3.6.16", 0), func(c *live.Cluster) {
				c.ClusterVersion = "3.6"
				c.Downgrade = &live.EtcdDowngrade{Done: "etcd-downgrade-to-3.6"}
			}),
			status: plan.StatusConverged,
		},
		{
			name: "reverted before any member moved: cancel", desired: etcdSpec(t, 3, "3.7.3"),
			observed: downgrading("3.7.3", "3.6", "etcd-downgrade-to-3.6"),
			status:   plan.StatusPlanned, steps: []string{"etcd-downgrade-cancel-3.6"},
			check: func(t *testing.T, p plan.Plan) {
				if d := p.Steps[0].Params.EtcdDowngrade; d == nil || d.Action != contract.EtcdDowngradeCancel {
					t.Errorf("cancel params %+v", p.Steps[0].Params)
				}
			},
		},
		{
			name: "reverted half-way: cancel, then the moved member goes back up", desired: etcdSpec(t, 3, "3.7.3"),
			observed: movedDown("3.7.3", "3.6.16", "3.6", 2),
			status:   plan.StatusPlanned, steps: []string{"etcd-downgrade-cancel-3.6", "upgrade-2-to-3.7.3"},
		},
		{
			name: "reverted half-way, cancel done: the moved member goes back up", desired: etcdSpec(t, 3, "3.7.3"),
			observed: with(movedDown("3.7.3", "3.6.16", "3.6", 2), func(c *live.Cluster) {
				c.Downgrade = &live.EtcdDowngrade{Done: "etcd-downgrade-cancel-3.6"}
			}),
			status: plan.StatusPlanned, steps: []string{"upgrade-2-to-3.7.3"},
		},
		{
			name: "enabled but a member is down: wait", desired: etcdSpec(t, 3, "3.6.16"),
			observed: with(downgrading("3.7.3", "3.6", "etcd-downgrade-to-3.6"), func(c *live.Cluster) { c.Members[1].Ready = false }),
			status:   plan.StatusWaiting, waiting: "e-1 is ready",
		},
	})
}

// The enable step is done only when etcd reports the downgrade enabled
// and every member's storage migrated, as the runtime reports them.
func TestEtcdDowngradeGatesFollowEtcd(t *testing.T) {
	c := etcdSpec(t, 3, "3.6.16")
	obs := with(etcdLive(3, "3.7.3", 0), func(c *live.Cluster) { c.ClusterVersion = "3.7" })
	enable := step(t, kinds.PlanCluster(c, obs, nil), "etcd-downgrade-to-3.6")
	for _, tc := range []struct {
		name string
		obs  *live.Cluster
		pass bool
	}{
		{"not yet enabled", obs, false},
		{"enabled, storage not migrated", with(downgrading("3.7.3", "3.6", "etcd-downgrade-to-3.6"), func(c *live.Cluster) { c.Downgrade.StorageMigrated = false }), false},
		{"enabled and migrated", downgrading("3.7.3", "3.6", "etcd-downgrade-to-3.6"), true},
		{"refused by etcd", with(etcdLive(3, "3.7.3", 0), func(c *live.Cluster) {
			c.ClusterVersion = "3.7"
			c.Downgrade = &live.EtcdDowngrade{Error: "etcdserver: invalid downgrade target version"}
		}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pass, why := gates.Pass(gates.After(enable, c, tc.obs, time.Time{}))
			if pass != tc.pass {
				t.Errorf("after-gates pass = %v (%s), want %v", pass, why, tc.pass)
			}
		})
	}
}
