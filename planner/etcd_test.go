package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

type planCase struct {
	name     string
	desired  spec.Cluster
	observed *live.Cluster
	status   plan.Status
	steps    []string // step IDs in order
	refusals []string // refusal rules
	waiting  string   // a substring of the first waiting gate
	check    func(t *testing.T, p plan.Plan)
}

func runCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := kinds.PlanCluster(tc.desired, tc.observed, nil)
			if p.Status != tc.status {
				t.Fatalf("status = %s, want %s (steps %v, refusals %v, waiting %v)", p.Status, tc.status, stepIDs(p), p.Refusals, p.Waiting)
			}
			if got := stepIDs(p); !slices.Equal(got, tc.steps) && !(len(got) == 0 && len(tc.steps) == 0) {
				t.Errorf("steps:\n got  %v\n want %v", got, tc.steps)
			}
			if got := refusalRules(p); !slices.Equal(got, tc.refusals) {
				t.Errorf("refusals = %v (%v), want %v", got, p.Refusals, tc.refusals)
			}
			if tc.waiting != "" && (len(p.Waiting) == 0 || !strings.Contains(p.Waiting[0].Description, tc.waiting)) {
				t.Errorf("waiting = %v, want one saying %q", p.Waiting, tc.waiting)
			}
			if err := p.Validate(); err != nil {
				t.Errorf("plan does not validate: %v", err)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

func TestEtcdPlans(t *testing.T) {
	runCases(t, []planCase{
		{
			name: "create from nothing", desired: etcdSpec(t, 3, "3.5.21"),
			status: plan.StatusPlanned, steps: []string{"create", "seal-bootstrap"},
			check: func(t *testing.T, p plan.Plan) {
				c := p.Steps[0].Params.CreateCluster
				if c.Members != 3 || c.Version != "3.5.21" || c.Storage != "8Gi" {
					t.Errorf("create params = %+v", c)
				}
			},
		},
		{name: "converged", desired: etcdSpec(t, 3, "3.5.21"), observed: etcdLive(3, "3.5.21", 0), status: plan.StatusConverged},
		{
			name: "a created cluster still in bootstrap mode is sealed", desired: etcdSpec(t, 3, "3.5.21"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Bootstrap = "new" }),
			status:   plan.StatusPlanned, steps: []string{"seal-bootstrap"},
		},
		{
			name: "scale out 3 to 5 adds learners one at a time", desired: etcdSpec(t, 5, "3.5.21"), observed: etcdLive(3, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"etcd-add-3", "etcd-add-4"},
			check: func(t *testing.T, p plan.Plan) {
				for i, s := range p.Steps {
					a := s.Params.EtcdAddMember
					if !a.Learner || a.Replicas != 4+i || s.Disruptive || !hasGate(s, plan.GateMemberVoter, plan.After) {
						t.Errorf("step %s: %+v disruptive=%v", s.ID, a, s.Disruptive)
					}
				}
			},
		},
		{
			name: "scale out before 3.4 adds voters; growing a single member is disruptive", desired: etcdSpec(t, 3, "3.2.13"), observed: etcdLive(1, "3.2.13", 0),
			status: plan.StatusPlanned, steps: []string{"etcd-add-1", "etcd-add-2"},
			check: func(t *testing.T, p plan.Plan) {
				if p.Steps[0].Params.EtcdAddMember.Learner || !p.Steps[0].Disruptive || p.Steps[1].Disruptive {
					t.Errorf("steps = %+v", p.Steps)
				}
			},
		},
		{
			name: "scale in removes the highest member first, then shrinks", desired: etcdSpec(t, 3, "3.5.21"), observed: etcdLive(5, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"etcd-remove-4", "scale-in-4", "etcd-remove-3", "scale-in-3"},
			check: func(t *testing.T, p plan.Plan) {
				if p.Steps[0].Params.EtcdRemoveMember.TransferLeadership {
					t.Error("a follower needs no leadership transfer")
				}
				if !hasGate(p.Steps[1], plan.GateMemberRemoved, plan.Before) {
					t.Error("the StatefulSet must shrink only after the member left")
				}
			},
		},
		{
			name: "scale in of the leader moves leadership first", desired: etcdSpec(t, 3, "3.5.21"), observed: etcdLive(5, "3.5.21", 4),
			status: plan.StatusPlanned, steps: []string{"etcd-remove-4", "scale-in-4", "etcd-remove-3", "scale-in-3"},
			check: func(t *testing.T, p plan.Plan) {
				s := p.Steps[0]
				if !s.Params.EtcdRemoveMember.TransferLeadership || s.Disruptive || !strings.Contains(s.Summary, "leadership") {
					t.Errorf("remove leader: %+v", s)
				}
				if p.Steps[2].Params.EtcdRemoveMember.TransferLeadership {
					t.Error("only the planned leader is flagged")
				}
			},
		},
		{
			name: "scale in of the leader on 3.2 cannot move leadership: disruptive", desired: etcdSpec(t, 1, "3.2.13"), observed: etcdLive(3, "3.2.13", 2),
			status: plan.StatusPlanned, steps: []string{"etcd-remove-2", "scale-in-2", "etcd-remove-1", "scale-in-1"},
			check: func(t *testing.T, p plan.Plan) {
				if p.Steps[0].Params.EtcdRemoveMember.TransferLeadership || !p.Steps[0].Disruptive {
					t.Errorf("remove leader on 3.2: %+v", p.Steps[0])
				}
			},
		},
		{
			name: "upgrade hops one minor at a time, one member at a time", desired: etcdSpec(t, 3, "3.5.21", withEtcdBackup), observed: etcdBacked(etcdLive(3, "3.2.13", 0), ""),
			status: plan.StatusPlanned,
			steps: []string{
				"backup-before-3.3.27", "upgrade-2-to-3.3.27", "upgrade-1-to-3.3.27", "upgrade-0-to-3.3.27",
				"backup-before-3.4.45", "upgrade-2-to-3.4.45", "upgrade-1-to-3.4.45", "upgrade-0-to-3.4.45",
				"backup-before-3.5.21", "upgrade-2-to-3.5.21", "upgrade-1-to-3.5.21", "upgrade-0-to-3.5.21",
			},
			check: func(t *testing.T, p plan.Plan) {
				var ups []plan.Step
				for _, s := range p.Steps {
					if s.Kind == plan.UpgradeMember {
						ups = append(ups, s)
					}
				}
				for i, s := range ups {
					u := s.Params.UpgradeMember
					if u.Partition != 2-i%3 || u.Ordinal != u.Partition || s.Disruptive {
						t.Errorf("step %s: %+v", s.ID, u)
					}
					if last := i%3 == 2; s.Reversible == last {
						t.Errorf("step %s: reversible=%v; only the last member of a minor hop is irreversible", s.ID, s.Reversible)
					}
				}
				if !hasGate(ups[3], plan.GateClusterVersion, plan.Before) {
					t.Error("the next hop waits for the cluster version of the last one")
				}
			},
		},
		{
			name: "3.5 below 3.5.32 goes to the newest 3.5 before 3.6", desired: etcdSpec(t, 3, "3.6.16", withEtcdBackup), observed: etcdBacked(etcdLive(3, "3.5.10", 0), ""),
			status: plan.StatusPlanned,
			steps: []string{
				"upgrade-2-to-3.5.35", "upgrade-1-to-3.5.35", "upgrade-0-to-3.5.35",
				"backup-before-3.6.16", "upgrade-2-to-3.6.16", "upgrade-1-to-3.6.16", "upgrade-0-to-3.6.16",
			},
		},
		{
			name: "patch downgrade within a minor is allowed", desired: etcdSpec(t, 3, "3.5.10"), observed: etcdLive(3, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"upgrade-2-to-3.5.10", "upgrade-1-to-3.5.10", "upgrade-0-to-3.5.10"},
			check: func(t *testing.T, p plan.Plan) {
				for _, s := range p.Steps {
					if !s.Reversible {
						t.Errorf("%s: a patch change is reversible", s.ID)
					}
				}
			},
		},
		{name: "downgrade across minors is refused", desired: etcdSpec(t, 3, "3.4.37"), observed: etcdLive(3, "3.5.21", 0), status: plan.StatusRefused, refusals: []string{RuleEtcdDowngrade}},
		{name: "size 8 is refused", desired: etcdSpec(t, 8, "3.5.21"), observed: etcdLive(3, "3.5.21", 0), status: plan.StatusRefused, refusals: []string{RuleEtcdSizeRange}},
		{name: "size 0 is refused", desired: etcdSpec(t, 0, "3.5.21"), status: plan.StatusRefused, refusals: []string{RuleEtcdSizeRange}},
		{name: "even size is refused", desired: etcdSpec(t, 4, "3.5.21"), observed: etcdLive(3, "3.5.21", 0), status: plan.StatusRefused, refusals: []string{RuleEtcdSizeEven}},
		{name: "storage shrink is refused", desired: etcdSpec(t, 3, "3.5.21", "storage: 4Gi"), observed: etcdLive(3, "3.5.21", 0), status: plan.StatusRefused, refusals: []string{RuleStorageShrink}},
		{
			name: "storage grows in one irreversible step", desired: etcdSpec(t, 3, "3.5.21", "storage: 16Gi"), observed: etcdLive(3, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"expand-storage-16gi"},
			check: func(t *testing.T, p plan.Plan) {
				if p.Steps[0].Reversible || p.Steps[0].Params.ExpandStorage.From != "8Gi" {
					t.Errorf("%+v", p.Steps[0])
				}
			},
		},
		{
			name: "a learner being promoted is waited for", desired: etcdSpec(t, 5, "3.5.21"),
			observed: with(etcdLive(4, "3.5.21", 0), func(c *live.Cluster) { c.Members[3].Role = live.RoleLearner }),
			status:   plan.StatusWaiting, waiting: "promotes learner e-3",
		},
		{
			name: "a member not ready is waited for", desired: etcdSpec(t, 5, "3.5.21"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[1].Ready = false }),
			status:   plan.StatusWaiting, waiting: "e-1 is ready",
		},
		{
			name: "a pod still to be created is waited for", desired: etcdSpec(t, 5, "3.5.21"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.StatefulSet.Replicas = 4 }),
			status:   plan.StatusWaiting, waiting: "creates e-3",
		},
		{
			name: "a lost member is replaced by the runtime before anything is added", desired: etcdSpec(t, 5, "3.5.21"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[2].DataLost = true }),
			status:   plan.StatusWaiting, waiting: "removes the member, then re-adds it",
		},
		{
			name: "quorum lost: no automatic action", desired: etcdSpec(t, 3, "3.5.21"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[1].Ready, c.Members[2].Ready = false, false }),
			status:   plan.StatusWaiting, waiting: "quorum is lost (1 of 3 voters healthy)",
		},
		{
			name: "a member that left is followed by the StatefulSet shrink", desired: etcdSpec(t, 3, "3.5.21"),
			observed: with(etcdLive(5, "3.5.21", 0), func(c *live.Cluster) { c.Members[4].Role = live.RoleRemoved }),
			status:   plan.StatusPlanned, steps: []string{"scale-in-4", "etcd-remove-3", "scale-in-3"},
		},
		{
			name: "a member that left has stopped: not ready, and the shrink still goes", desired: etcdSpec(t, 3, "3.5.21"),
			observed: with(etcdLive(5, "3.5.21", 0), func(c *live.Cluster) { c.Members[4].Role, c.Members[4].Ready = live.RoleRemoved, false }),
			status:   plan.StatusPlanned, steps: []string{"scale-in-4", "etcd-remove-3", "scale-in-3"},
		},
		{
			name: "a member that left but is not the highest is waited for", desired: etcdSpec(t, 3, "3.5.21"),
			observed: with(etcdLive(5, "3.5.21", 0), func(c *live.Cluster) { c.Members[3].Role, c.Members[3].Ready = live.RoleRemoved, false }),
			status:   plan.StatusWaiting, waiting: "e-3 is ready",
		},
		{
			name: "a half-done upgrade hop is finished first", desired: etcdSpec(t, 3, "3.4.37", withEtcdBackup),
			observed: with(etcdBacked(etcdLive(3, "3.3.27", 0), "backup-before-3.3.27"), func(c *live.Cluster) {
				c.StatefulSet.Version, c.StatefulSet.UpdatePartition = "3.3.27", 1
				c.Members[0].Version = "3.2.32"
			}),
			status: plan.StatusPlanned, steps: []string{"upgrade-0-to-3.3.27", "backup-before-3.4.37", "upgrade-2-to-3.4.37", "upgrade-1-to-3.4.37", "upgrade-0-to-3.4.37"},
			check: func(t *testing.T, p plan.Plan) {
				if p.Steps[0].Reversible {
					t.Error("the last member of a minor hop is irreversible")
				}
			},
		},
		{
			name: "a member still rolling is waited for", desired: etcdSpec(t, 3, "3.3.27"),
			observed: with(etcdLive(3, "3.2.32", 0), func(c *live.Cluster) {
				c.StatefulSet.Version, c.StatefulSet.UpdatePartition = "3.3.27", 2
			}),
			status: plan.StatusWaiting, waiting: "e-2 restarts at 3.3.27",
		},
		{
			name: "a single member is grown to 3 before an upgrade, so no restart is disruptive", desired: etcdSpec(t, 5, "3.5.21", withEtcdBackup), observed: etcdBacked(etcdLive(1, "3.4.37", 0), "backup-before-3.5.21"),
			status: plan.StatusPlanned,
			steps:  []string{"etcd-add-1", "etcd-add-2", "upgrade-2-to-3.5.21", "upgrade-1-to-3.5.21", "upgrade-0-to-3.5.21", "etcd-add-3", "etcd-add-4"},
			check: func(t *testing.T, p plan.Plan) {
				for _, s := range p.Steps {
					if s.Disruptive {
						t.Errorf("%s is disruptive", s.ID)
					}
				}
				if p.Steps[5].Params.EtcdAddMember.Member != "e-3" {
					t.Error("members added after the upgrade join at the new version")
				}
			},
		},
		{
			name: "a one-member upgrade is disruptive", desired: etcdSpec(t, 1, "3.5.21"), observed: etcdLive(1, "3.5.20", 0),
			status: plan.StatusPlanned, steps: []string{"upgrade-0-to-3.5.21"},
			check: func(t *testing.T, p plan.Plan) {
				if !p.Steps[0].Disruptive {
					t.Error("restarting the only member stops the cluster")
				}
			},
		},
		{
			name: "backup policy change", desired: etcdSpec(t, 3, "3.5.21", "backup: {schedule: '0 3 * * *', storageLocation: 's3://bkp/etcd'}"), observed: etcdLive(3, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"configure-backup"},
			check: func(t *testing.T, p plan.Plan) {
				b := p.Steps[0].Params.ConfigureBackup
				if b.From != nil || b.To.Schedule != "0 3 * * *" || b.To.TimeZone != "UTC" {
					t.Errorf("%+v", b)
				}
			},
		},
		{
			name: "maintenance window gates disruptive steps only", desired: etcdSpec(t, 1, "3.5.21", "maintenanceWindow: {schedule: '0 22 * * *', duration: 2h}", "storage: 10Gi"), observed: etcdLive(1, "3.5.20", 0),
			status: plan.StatusPlanned, steps: []string{"expand-storage-10gi", "upgrade-0-to-3.5.21"},
			check: func(t *testing.T, p plan.Plan) {
				if hasGate(p.Steps[0], plan.GateMaintenanceWindow, plan.Before) || !hasGate(p.Steps[1], plan.GateMaintenanceWindow, plan.Before) {
					t.Errorf("window gates: %+v", p.Steps)
				}
			},
		},
		{
			name: "several changes in a safe order", desired: etcdSpec(t, 5, "3.5.21", "storage: 16Gi", withEtcdBackup), observed: etcdBacked(etcdLive(3, "3.4.37", 0), ""),
			status: plan.StatusPlanned,
			steps:  []string{"expand-storage-16gi", "backup-before-3.5.21", "upgrade-2-to-3.5.21", "upgrade-1-to-3.5.21", "upgrade-0-to-3.5.21", "etcd-add-3", "etcd-add-4"},
		},
		{
			name: "a cluster on a blocked version can be upgraded off it", desired: etcdSpec(t, 3, "3.5.21"), observed: etcdLive(3, "3.5.1", 0),
			status: plan.StatusPlanned, steps: []string{"upgrade-2-to-3.5.21", "upgrade-1-to-3.5.21", "upgrade-0-to-3.5.21"},
		},
		{
			name: "a rolling upgrade that skips a minor is refused", desired: etcdSpec(t, 3, "3.4.37"),
			observed: with(etcdLive(3, "3.2.13", 0), func(c *live.Cluster) { c.StatefulSet.Version, c.StatefulSet.UpdatePartition = "3.4.37", 3 }),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdMinorSkip},
		},
		{
			name: "a member ahead of the template is refused", desired: etcdSpec(t, 3, "3.4.37"),
			observed: with(etcdLive(3, "3.4.37", 0), func(c *live.Cluster) { c.Members[2].Version = "3.5.21" }),
			status:   plan.StatusRefused, refusals: []string{RuleEtcdDowngrade},
		},
		{
			name: "a cluster version that lags the members is waited for", desired: etcdSpec(t, 3, "3.4.37"),
			observed: with(etcdLive(3, "3.3.27", 0), func(c *live.Cluster) { c.ClusterVersion = "3.2" }),
			status:   plan.StatusWaiting, waiting: "raises its cluster version from 3.2 to 3.3",
		},
		{
			name: "the first step of a minor upgrade checks the cluster version", desired: etcdSpec(t, 3, "3.4.37", withEtcdBackup), observed: etcdBacked(etcdLive(3, "3.3.27", 0), "backup-before-3.4.37"),
			status: plan.StatusPlanned, steps: []string{"upgrade-2-to-3.4.37", "upgrade-1-to-3.4.37", "upgrade-0-to-3.4.37"},
			check: func(t *testing.T, p plan.Plan) {
				if !hasGate(p.Steps[0], plan.GateClusterVersion, plan.Before) || hasGate(p.Steps[1], plan.GateClusterVersion, plan.Before) {
					t.Errorf("cluster version gates: %+v", p.Steps[:2])
				}
			},
		},
		{
			name: "a voter just added before 3.4 is waited for, not called lost quorum", desired: etcdSpec(t, 3, "3.2.13"),
			observed: with(etcdLive(2, "3.2.13", 0), func(c *live.Cluster) { c.Members[1].Ready = false }),
			status:   plan.StatusWaiting, waiting: "e-1 is starting",
		},
		{
			name: "storage step IDs use the canonical quantity", desired: etcdSpec(t, 3, "3.5.21", "storage: 17179869184"), observed: etcdLive(3, "3.5.21", 0),
			status: plan.StatusPlanned, steps: []string{"expand-storage-16gi"},
		},
		{
			name: "an unreadable running version is refused", desired: etcdSpec(t, 3, "3.5.21"),
			observed: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.Members[1].Version = "v3.5" }),
			status:   plan.StatusRefused, refusals: []string{RuleUnknownVersion},
		},
		{
			name: "a version cairn cannot upgrade from is refused", desired: etcdSpec(t, 3, "3.2.13"),
			observed: etcdLive(3, "3.1.20", 0), status: plan.StatusRefused, refusals: []string{RuleUnknownVersion},
		},
	})
}
