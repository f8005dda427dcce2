package publish

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// interruption is what the "Expected disruption" line of a step the
// planner marks disruptive must say, in some words: clients are
// interrupted.
var interruption = []string{"down", "stop", "pause", "wait", "fail", "cut", "refuse", "no quorum", "no reads or writes", "interrupted"}

// outage is what the line of a step the planner does not mark
// disruptive must never say.
var outage = []string{"is down", "down until", "no quorum", "writes stop", "writes fail", "commits wait", "no reads or writes", "downtime", "are interrupted"}

// contradiction is how the "Disruptive" line (the planner's verdict)
// and the "Expected disruption" line contradict each other; "" when
// they agree.
func contradiction(s plan.Step, effect string) string {
	if s.Disruptive {
		if strings.HasPrefix(effect, "none") {
			return "disruptive, and the effect says none"
		}
		if !slices.ContainsFunc(interruption, func(w string) bool { return strings.Contains(effect, w) }) {
			return "disruptive, and the effect names no interruption"
		}
		return ""
	}
	for _, w := range outage {
		if strings.Contains(effect, w) {
			return fmt.Sprintf("not disruptive, and the effect says %q", w)
		}
	}
	return ""
}

// checkImpact checks both lines of s's body for wording w and the live
// state c: the impact is known and does not contradict the verdict.
func checkImpact(t *testing.T, w Wording, s plan.Step, c *live.Cluster) {
	t.Helper()
	im := stepImpact(w, s, c)
	if !im.known {
		t.Errorf("%s (%s): no expected disruption said", s.ID, s.Kind)
		return
	}
	if why := contradiction(s, im.effect); why != "" {
		t.Errorf("%s (%s): %s: %q", s.ID, s.Kind, why, im.effect)
	}
}

// Every step kind, as the planner makes it (both verdicts where it gives
// both): the Disruptive line and the Expected disruption line agree,
// with the live state known and without it.
func TestDisruptionWordingOfEveryKind(t *testing.T) {
	e3, pg3 := etcdCluster("e", 3, "3.5.21"), pgCluster("pg", 3, "14.5", 0)
	e3.Members[2].Role = live.RoleLeader
	e3.Members[0].Role = live.RoleFollower
	step := func(k plan.Kind, disruptive bool, p plan.Params) plan.Step {
		return plan.Step{ID: string(k), Kind: k, Disruptive: disruptive, Params: p}
	}
	steps := []struct {
		kinds string
		w     Wording
		c     *live.Cluster
		s     plan.Step
	}{
		{"etcd", EtcdWording(), e3, step(plan.CreateCluster, false, plan.Params{CreateCluster: &plan.CreateClusterParams{Members: 3}})},
		{"etcd", EtcdWording(), e3, step(plan.ConfigureBackup, false, plan.Params{ConfigureBackup: &plan.ConfigureBackupParams{}})},
		{"etcd", EtcdWording(), e3, step(plan.TakeBackup, false, plan.Params{TakeBackup: &plan.TakeBackupParams{}})},
		{"pg", PostgresWording(), pg3, step(plan.ExpandStorage, false, plan.Params{ExpandStorage: &plan.ExpandStorageParams{From: "1Gi", To: "2Gi"}})},
		{"etcd", EtcdWording(), e3, step(plan.UpgradeMember, false, plan.Params{UpgradeMember: &plan.UpgradeMemberParams{Member: "e-2", Replicas: 3, From: "3.5.21", To: "3.6.4"}})},
		{"etcd", EtcdWording(), e3, step(plan.UpgradeMember, true, plan.Params{UpgradeMember: &plan.UpgradeMemberParams{Member: "e-1", Replicas: 2, From: "3.5.21", To: "3.6.4"}})},
		{"etcd", EtcdWording(), e3, step(plan.UpgradeMember, true, plan.Params{UpgradeMember: &plan.UpgradeMemberParams{Member: "e-0", Replicas: 1, From: "3.5.21", To: "3.6.4"}})},
		{"pg", PostgresWording(), pg3, step(plan.UpgradeMember, false, plan.Params{UpgradeMember: &plan.UpgradeMemberParams{Member: "pg-2", Replicas: 3, From: "14.5", To: "14.9"}})},
		{"pg", PostgresWording(), pg3, step(plan.UpgradeMember, true, plan.Params{UpgradeMember: &plan.UpgradeMemberParams{Member: "pg-2", Replicas: 3, From: "14.5", To: "14.9"}})},
		{"pg", PostgresWording(), pg3, step(plan.UpgradeMember, true, plan.Params{UpgradeMember: &plan.UpgradeMemberParams{Member: "pg-0", Replicas: 3, From: "14.5", To: "14.9"}})},
		{"pg", PostgresWording(), pg3, step(plan.ScaleIn, false, plan.Params{ScaleIn: &plan.ScaleInParams{Member: "pg-2"}})},
		{"etcd", EtcdWording(), e3, step(plan.EtcdAddMember, false, plan.Params{EtcdAddMember: &plan.EtcdAddMemberParams{Member: "e-3", Replicas: 4, Learner: true}})},
		{"etcd", EtcdWording(), e3, step(plan.EtcdAddMember, false, plan.Params{EtcdAddMember: &plan.EtcdAddMemberParams{Member: "e-3", Replicas: 4}})},
		// The etcd-add-1 of issue 41: a second voter for an etcd without learners.
		{"etcd", EtcdWording(), e3, step(plan.EtcdAddMember, true, plan.Params{EtcdAddMember: &plan.EtcdAddMemberParams{Member: "e-1", Ordinal: 1, Replicas: 2}})},
		{"etcd", EtcdWording(), e3, step(plan.EtcdRemoveMember, false, plan.Params{EtcdRemoveMember: &plan.EtcdRemoveMemberParams{Member: "e-2", TransferLeadership: true}})},
		{"etcd", EtcdWording(), e3, step(plan.EtcdRemoveMember, false, plan.Params{EtcdRemoveMember: &plan.EtcdRemoveMemberParams{Member: "e-1"}})},
		{"etcd", EtcdWording(), e3, step(plan.EtcdRemoveMember, true, plan.Params{EtcdRemoveMember: &plan.EtcdRemoveMemberParams{Member: "e-2"}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresAddReplica, false, plan.Params{PostgresAddReplica: &plan.PostgresAddReplicaParams{Member: "pg-3"}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresAddReplica, false, plan.Params{PostgresAddReplica: &plan.PostgresAddReplicaParams{Member: "pg-1", Members: []string{"pg-1", "pg-2"}}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresSwitchover, true, plan.Params{PostgresSwitchover: &plan.PostgresSwitchoverParams{From: "pg-0", To: "pg-1"}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresMajorUpgrade, true, plan.Params{PostgresMajorUpgrade: &plan.PostgresMajorUpgradeParams{Primary: "pg-0", From: "13", To: "14"}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresUpgradeCheck, false, plan.Params{PostgresUpgradeCheck: &plan.PostgresUpgradeCheckParams{Job: "pg-chk"}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresUpgradeCheck, false, plan.Params{PostgresUpgradeCheck: &plan.PostgresUpgradeCheckParams{Job: "pg-chk", Remove: true}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresSynchronousStandbys, false, plan.Params{PostgresSynchronousStandbys: &plan.PostgresSynchronousStandbysParams{From: 0, To: 1}})},
		{"etcd", EtcdWording(), e3, step(plan.RestartMember, false, plan.Params{RestartMember: &plan.RestartMemberParams{Member: "e-2", Replicas: 3}})},
		{"etcd", EtcdWording(), e3, step(plan.RestartMember, true, plan.Params{RestartMember: &plan.RestartMemberParams{Member: "e-1", Replicas: 3}})},
		{"etcd", EtcdWording(), e3, step(plan.RestartMember, true, plan.Params{RestartMember: &plan.RestartMemberParams{Member: "e-1", Replicas: 3,
			Template: &plan.TemplateChange{TLS: contract.TLSRequire}}})},
		{"pg", PostgresWording(), pg3, step(plan.RestartMember, false, plan.Params{RestartMember: &plan.RestartMemberParams{Member: "pg-1", Replicas: 3}})},
		{"pg", PostgresWording(), pg3, step(plan.RestartMember, true, plan.Params{RestartMember: &plan.RestartMemberParams{Member: "pg-0", Replicas: 3}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresReloadParameters, false, plan.Params{PostgresReloadParameters: &plan.ParameterChange{}})},
		{"etcd", EtcdWording(), e3, step(plan.EtcdConfigureCompaction, false, plan.Params{EtcdConfigureCompaction: &plan.EtcdConfigureCompactionParams{}})},
		{"etcd", EtcdWording(), e3, step(plan.SealBootstrap, false, plan.Params{SealBootstrap: &plan.SealBootstrapParams{}})},
		{"etcd", EtcdWording(), e3, step(plan.EtcdRecover, false, plan.Params{EtcdRecover: &plan.EtcdRecoverParams{Seed: "e-0", Members: 3}})},
		{"etcd", EtcdWording(), e3, step(plan.EtcdDowngrade, false, plan.Params{EtcdDowngrade: &plan.EtcdDowngradeParams{From: "3.6", To: "3.5"}})},
		{"etcd", EtcdWording(), e3, step(plan.EtcdDowngrade, false, plan.Params{EtcdDowngrade: &plan.EtcdDowngradeParams{From: "3.6", To: "3.5", Action: contract.EtcdDowngradeCancel}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresConfigureTLS, true, plan.Params{PostgresConfigureTLS: &plan.PostgresConfigureTLSParams{To: contract.TLSAccept}})},
		{"pg", PostgresWording(), pg3, step(plan.PostgresConfigureTLS, true, plan.Params{PostgresConfigureTLS: &plan.PostgresConfigureTLSParams{To: contract.TLSRequire}})},
		{"pg", PostgresWording(), pg3, step(plan.RestrictNetwork, true, plan.Params{RestrictNetwork: &plan.RestrictNetworkParams{Policy: "pg-members", ClientLabel: "access"}})},
		{"pg", PostgresWording(), pg3, step(plan.HardenRuntime, false, plan.Params{HardenRuntime: &plan.HardenRuntimeParams{Deployment: "pg-runtime"}})},
	}
	seen := map[plan.Kind]bool{}
	for _, tc := range steps {
		seen[tc.s.Kind] = true
		t.Run(fmt.Sprintf("%s %s disruptive=%v", tc.kinds, tc.s.Kind, tc.s.Disruptive), func(t *testing.T) {
			checkImpact(t, tc.w, tc.s, tc.c)
			checkImpact(t, tc.w, tc.s, nil)
		})
	}
	for _, k := range plan.Kinds() {
		if !seen[k] {
			t.Errorf("kind %s has no row", k)
		}
	}
}

// Every step of the plans the planner makes for a grid of changes
// (sizes, versions with and without etcd learners, leaders and primaries
// at either end, synchronous standbys): its two lines agree.
func TestDisruptionWordingOfPlannedSteps(t *testing.T) {
	p := planner.New(planner.Etcd(), planner.Postgres())
	planned := 0
	check := func(doc string, obs *live.Cluster, w Wording) {
		t.Helper()
		cs, err := spec.Decode("spec.yaml", []byte(doc))
		if err != nil || len(cs) != 1 {
			t.Fatalf("spec %q: %v", doc, err)
		}
		pl := p.PlanCluster(cs[0], obs, nil)
		if pl.Status != plan.StatusPlanned {
			return
		}
		planned++
		for i, s := range pl.Steps {
			if i == 0 { // the roles as planned hold for the first step only, as Body uses them
				checkImpact(t, w, s, obs)
			}
			checkImpact(t, w, s, nil)
		}
	}
	for _, version := range []string{"3.2.13", "3.5.21"} {
		for _, from := range []int{1, 2, 3, 5} {
			for _, to := range []int{1, 3, 5, 7} {
				for _, leader := range []int{0, from - 1} {
					obs := etcdCluster("e", from, version)
					for i := range obs.Members {
						obs.Members[i].Role = live.RoleFollower
					}
					obs.Members[leader].Role = live.RoleLeader
					check(etcdSpecDoc("e", to, version), obs, EtcdWording())
					if version == "3.5.21" {
						check(etcdSpecDoc("e", to, "3.6.4"), obs, EtcdWording())
					}
				}
			}
		}
	}
	for _, from := range []int{1, 2, 3, 4} {
		for _, to := range []int{1, 2, 3, 4} {
			for _, primary := range []int{0, from - 1} {
				for _, sync := range []int{0, 1, 2} {
					if sync >= to {
						continue
					}
					obs := pgCluster("pg", from, "14.5", primary)
					doc := strings.Replace(pgSpecDoc("pg", to, "14.9"), "storage: 100Gi}", fmt.Sprintf("storage: 100Gi, synchronousStandbys: %d}", sync), 1)
					check(doc, obs, PostgresWording())
					check(strings.Replace(doc, "14.9", "14.5", 1), obs, PostgresWording())
				}
			}
		}
	}
	if planned < 50 {
		t.Errorf("only %d plans made: the grid does not exercise the planner", planned)
	}
}
