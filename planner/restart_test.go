package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// shape sums a plan up as "kind member" per step, free of revision hashes.
func shape(p plan.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		switch pm := s.Params; {
		case pm.RestartMember != nil:
			out = append(out, "restart "+pm.RestartMember.Member)
		case pm.PostgresSwitchover != nil:
			out = append(out, "switchover "+pm.PostgresSwitchover.From+">"+pm.PostgresSwitchover.To)
		case pm.PostgresReloadParameters != nil:
			out = append(out, "reload")
		default:
			out = append(out, s.ID)
		}
	}
	return out
}

func pgParams(c *live.Cluster, params map[string]string) *live.Cluster {
	c.Parameters, c.ConfigRevision = params, contract.ConfigRevisionOf(params)
	for i := range c.Members {
		c.Members[i].ConfigRevision = c.ConfigRevision
	}
	return c
}

func TestEverySpecFieldThatRunsIsPlanned(t *testing.T) {
	res := "resources: {requests: {cpu: '1', memory: 2Gi}}"
	cases := []struct {
		name     string
		plan     plan.Plan
		shape    []string
		refusals []string
		check    func(t *testing.T, p plan.Plan)
	}{
		{
			name: "resources written as the API server writes them back are no change",
			plan: kinds.PlanCluster(pgSpec(t, 3, "14.5", "resources: {requests: {cpu: '0.5', memory: 1024Mi}}"), with(pgLive(3, "14.5", 0), func(c *live.Cluster) {
				c.StatefulSet.Resources = &contract.Resources{Requests: contract.ResourceList{CPU: "500m", Memory: "1Gi"}}
			}), nil),
			shape: nil,
		},
		{
			name:  "new resources restart the replicas first, switch over, then the old primary",
			plan:  kinds.PlanCluster(pgSpec(t, 3, "14.5", res), pgLive(3, "14.5", 0), nil),
			shape: []string{"restart pg-2", "restart pg-1", "switchover pg-0>pg-1", "restart pg-0"},
			check: func(t *testing.T, p plan.Plan) {
				first := p.Steps[0]
				if first.Params.RestartMember.Template == nil || first.Params.RestartMember.Template.Resources.Requests.CPU != "1" || first.Disruptive {
					t.Errorf("first step %+v", first)
				}
				for _, s := range p.Steps[1:] {
					if s.Params.RestartMember != nil && s.Params.RestartMember.Template != nil {
						t.Errorf("%s changes the template again", s.ID)
					}
				}
				if !hasGate(first, plan.GateMemberRestarted, plan.After) {
					t.Errorf("no restart gate on %s", first.ID)
				}
			},
		},
		{
			name:  "a primary in the middle is switched over once",
			plan:  kinds.PlanCluster(pgSpec(t, 3, "14.5", res), pgLive(3, "14.5", 1), nil),
			shape: []string{"restart pg-2", "switchover pg-1>pg-2", "restart pg-1", "restart pg-0"},
		},
		{
			name:  "the only synchronous standby's restart is disruptive",
			plan:  kinds.PlanCluster(pgSpec(t, 2, "14.5", res, "synchronousStandbys: 1"), with(pgLive(2, "14.5", 0), func(c *live.Cluster) { c.SynchronousStandbys = 1 }), nil),
			shape: []string{"restart pg-1", "switchover pg-0>pg-1", "restart pg-0"},
			check: func(t *testing.T, p plan.Plan) {
				if !p.Steps[0].Disruptive {
					t.Error("restarting the only synchronous standby stops commits: disruptive")
				}
			},
		},
		{
			name:  "reload-only parameters are one reload step",
			plan:  kinds.PlanCluster(pgSpec(t, 3, "14.5", "postgresql: {parameters: {work_mem: 8MB}}"), pgLive(3, "14.5", 0), nil),
			shape: []string{"reload"},
			check: func(t *testing.T, p plan.Plan) {
				s := p.Steps[0]
				if s.Disruptive || !hasGate(s, plan.GateConfigApplied, plan.After) || !strings.Contains(s.Summary, "work_mem") {
					t.Errorf("%+v", s)
				}
			},
		},
		{
			name:  "a restart-only parameter is a rolling restart that changes the config in its first step",
			plan:  kinds.PlanCluster(pgSpec(t, 3, "14.5", "postgresql: {parameters: {shared_buffers: 1GB, work_mem: 8MB}}"), pgLive(3, "14.5", 0), nil),
			shape: []string{"restart pg-2", "restart pg-1", "switchover pg-0>pg-1", "restart pg-0"},
			check: func(t *testing.T, p plan.Plan) {
				pc := p.Steps[0].Params.RestartMember.Template.Parameters
				if pc == nil || !slices.Equal(pc.Restart, []string{"shared_buffers"}) {
					t.Errorf("%+v", pc)
				}
			},
		},
		{
			name:  "a raised hot-standby parameter goes to the replicas first",
			plan:  kinds.PlanCluster(pgSpec(t, 3, "14.5", "postgresql: {parameters: {max_connections: 300}}"), pgParams(pgLive(3, "14.5", 2), map[string]string{"max_connections": "'200'"}), nil),
			shape: []string{"switchover pg-2>pg-0", "restart pg-2", "restart pg-1", "switchover pg-0>pg-1", "restart pg-0"},
		},
		{
			name:  "a lowered hot-standby parameter restarts the primary first, in place",
			plan:  kinds.PlanCluster(pgSpec(t, 3, "14.5", "postgresql: {parameters: {max_connections: 100}}"), pgParams(pgLive(3, "14.5", 0), map[string]string{"max_connections": "'200'"}), nil),
			shape: []string{"switchover pg-0>pg-2", "restart pg-2", "restart pg-1", "restart pg-0"},
			check: func(t *testing.T, p plan.Plan) {
				if !p.Steps[1].Disruptive || !strings.Contains(p.Steps[1].Summary, "primary") {
					t.Errorf("restarting the primary in place: %+v", p.Steps[1])
				}
			},
		},
		{
			name:     "raising one hot-standby parameter and lowering another is refused",
			plan:     kinds.PlanCluster(pgSpec(t, 3, "14.5", "postgresql: {parameters: {max_connections: 300, max_worker_processes: 4}}"), pgParams(pgLive(3, "14.5", 0), map[string]string{"max_connections": "'200'"}), nil),
			refusals: []string{RulePostgresHotStandbyMixed},
		},
		{
			name:     "a storage class change is refused with the way out",
			plan:     kinds.PlanCluster(pgSpec(t, 3, "14.5", "storageClass: fast"), pgLive(3, "14.5", 0), nil),
			refusals: []string{RuleStorageClassImmutable},
			check: func(t *testing.T, p plan.Plan) {
				if !strings.Contains(p.Refusals[0].Reason, "restoreFrom") {
					t.Errorf("no way out: %s", p.Refusals[0].Reason)
				}
			},
		},
		{
			name:     "an etcd storage class change is refused",
			plan:     kinds.PlanCluster(etcdSpec(t, 3, "3.5.21", "storageClass: fast"), etcdLive(3, "3.5.21", 0), nil),
			refusals: []string{RuleStorageClassImmutable},
		},
		{
			name:  "etcd resources restart one member at a time",
			plan:  kinds.PlanCluster(etcdSpec(t, 3, "3.5.21", res), etcdLive(3, "3.5.21", 0), nil),
			shape: []string{"restart e-2", "restart e-1", "restart e-0"},
			check: func(t *testing.T, p plan.Plan) {
				for _, s := range p.Steps {
					if s.Disruptive {
						t.Errorf("%s: a 3-member cluster keeps quorum through one restart", s.ID)
					}
				}
			},
		},
		{
			name:  "a one-member etcd restart is disruptive",
			plan:  kinds.PlanCluster(etcdSpec(t, 1, "3.5.21", res), etcdLive(1, "3.5.21", 0), nil),
			shape: []string{"restart e-0"},
			check: func(t *testing.T, p plan.Plan) {
				if !p.Steps[0].Disruptive {
					t.Error("not disruptive")
				}
			},
		},
		{
			name: "a restart under way is finished",
			plan: kinds.PlanCluster(pgSpec(t, 3, "14.5", res), with(pgLive(3, "14.5", 0), func(c *live.Cluster) {
				c.StatefulSet.Resources = &contract.Resources{Requests: contract.ResourceList{CPU: "1", Memory: "2Gi"}}
				c.StatefulSet.TemplateRevision, c.StatefulSet.UpdatePartition = "abc", 2
				c.Members[2].TemplateRevision = "abc"
			}), nil),
			shape: []string{"restart pg-1", "switchover pg-0>pg-1", "restart pg-0"},
		},
		{
			name: "a spec reverted mid-restart moves back only the members that restarted",
			plan: kinds.PlanCluster(pgSpec(t, 3, "14.5"), with(pgLive(3, "14.5", 0), func(c *live.Cluster) {
				c.StatefulSet.Resources = &contract.Resources{Requests: contract.ResourceList{CPU: "1", Memory: "2Gi"}}
				c.StatefulSet.TemplateRevision, c.StatefulSet.UpdatePartition = "abc", 2
				c.Members[2].TemplateRevision = "abc"
				for _, i := range []int{0, 1} {
					c.Members[i].TemplateRevision = contract.TemplateRevisionOf(contract.Resources{}, map[string]string{})
				}
			}), nil),
			shape: []string{"restart pg-2"},
			check: func(t *testing.T, p plan.Plan) {
				if p.Steps[0].Params.RestartMember.Partition != 2 {
					t.Errorf("partition %d", p.Steps[0].Params.RestartMember.Partition)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.plan
			if got := shape(p); !slices.Equal(got, tc.shape) {
				t.Errorf("steps:\n got  %v\n want %v (refusals %v, waiting %v)", got, tc.shape, p.Refusals, p.Waiting)
			}
			if got := refusalRules(p); !slices.Equal(got, tc.refusals) {
				t.Errorf("refusals = %v, want %v", p.Refusals, tc.refusals)
			}
			if err := p.Validate(); err != nil {
				t.Errorf("plan does not validate: %v", err)
			}
			if tc.check != nil && !t.Failed() {
				tc.check(t, p)
			}
		})
	}
}

// A new image for the version that runs (a cairn release, another
// registry) is a rolling restart; a version step brings it on its own.
func TestNewImagesAreARollingRestart(t *testing.T) {
	images := func(c spec.Cluster, version string, _ int) (map[string]string, error) {
		return map[string]string{"install-cairn": "cairn:v2", "postgres": "postgres:" + version}, nil
	}
	pl := New(Etcd(), Postgres()).WithImages(images)
	running := func(c *live.Cluster) *live.Cluster {
		c.StatefulSet.Images = map[string]string{"install-cairn": "cairn:v1", "postgres": "postgres:" + c.StatefulSet.Version}
		return c
	}
	p := pl.PlanCluster(pgSpec(t, 3, "14.5"), running(pgLive(3, "14.5", 0)), nil)
	if got, want := shape(p), []string{"restart pg-2", "restart pg-1", "switchover pg-0>pg-1", "restart pg-0"}; !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	if s := p.Steps[0].Summary; !strings.Contains(s, "install-cairn cairn:v1 -> cairn:v2") {
		t.Errorf("the summary does not say the image change: %s", s)
	}
	p = pl.PlanCluster(pgSpec(t, 3, "14.9"), running(pgLive(3, "14.5", 0)), nil)
	if s := p.Steps[0].Summary; !strings.Contains(s, "it also brings the images install-cairn cairn:v1 -> cairn:v2") || strings.Contains(s, "postgres:14.5 ->") {
		t.Errorf("the first upgrade step does not say the images it brings: %s", s)
	}
	for _, s := range p.Steps {
		if s.Kind == plan.RestartMember {
			t.Errorf("%s: the minor upgrade brings the new images; no restart on top", s.ID)
		}
	}
	same := func(c spec.Cluster, version string, _ int) (map[string]string, error) {
		return map[string]string{"install-cairn": "cairn:v1", "postgres": "postgres:" + version}, nil
	}
	if p := New(Postgres()).WithImages(same).PlanCluster(pgSpec(t, 3, "14.5"), running(pgLive(3, "14.5", 0)), nil); p.Status != plan.StatusConverged {
		t.Errorf("the images that run are those named: %s %v", p.Status, stepIDs(p))
	}
}
