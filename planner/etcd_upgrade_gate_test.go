package planner

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
)

// An etcd upgrade step is done only when the upgraded member's own etcd
// reports the new version (planner/observe takes an etcd member's version
// from the runtime's status, not from its pod's image), the member is
// ready, and the cluster is healthy: every voter healthy, one leader.
func TestEtcdUpgradeWaitsForTheReportedVersion(t *testing.T) {
	c := etcdSpec(t, 3, "3.6.16", withEtcdBackup)
	p := kinds.PlanCluster(c, etcdBacked(etcdLive(3, "3.5.21", 0), "backup-before-3.6.16"), nil)
	s := p.Steps[0]
	if s.Params.UpgradeMember == nil || s.Params.UpgradeMember.Member != "e-2" {
		t.Fatalf("first step %s", s.ID)
	}
	to := s.Params.UpgradeMember.To
	upgraded := func(edit func(c *live.Cluster)) *live.Cluster {
		return with(etcdBacked(etcdLive(3, "3.5.21", 0), "backup-before-3.6.16"), func(c *live.Cluster) {
			c.StatefulSet.Version, c.StatefulSet.UpdatePartition = to, 2
			c.Members[2].Version = to
			edit(c)
		})
	}
	tests := []struct {
		name string
		obs  *live.Cluster
		pass bool
	}{
		{"rejoined at the new version, cluster healthy", upgraded(func(*live.Cluster) {}), true},
		{"its etcd still reports the old version", upgraded(func(c *live.Cluster) { c.Members[2].Version = "3.5.21" }), false},
		{"at the new version but not ready", upgraded(func(c *live.Cluster) { c.Members[2].Ready = false }), false},
		{"at the new version but not yet a voter again", upgraded(func(c *live.Cluster) { c.Members[2].Role = live.RoleUnknown }), false},
		{"another voter unhealthy", upgraded(func(c *live.Cluster) { c.Members[1].Role = live.RoleUnknown }), false},
		{"no leader", upgraded(func(c *live.Cluster) { c.Members[0].Role = live.RoleFollower }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := gates.Pass(gates.After(s, c, tc.obs, time.Time{}))
			if ok != tc.pass {
				t.Fatalf("pass %v (%s), want %v", ok, why, tc.pass)
			}
		})
	}
}
