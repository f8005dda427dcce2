package renderer

import (
	"reflect"
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
)

func TestPostgresDisruptionBudgets(t *testing.T) {
	n := names{cluster: "pg", namespace: "db", app: contract.AppPostgres}
	type pdb struct {
		name, role string
		min        int
	}
	for _, tc := range []struct {
		members int
		want    []pdb
	}{
		// A lone primary: no budget holds its drain forever.
		{1, []pdb{{"pg", "replica", 0}}},
		{2, []pdb{{"pg", "replica", 0}, {"pg-primary", "primary,fenced", 1}}},
		{3, []pdb{{"pg", "replica", 1}, {"pg-primary", "primary,fenced", 1}}},
		{5, []pdb{{"pg", "replica", 3}, {"pg-primary", "primary,fenced", 1}}},
	} {
		got := postgresDisruptionBudgets(n, tc.members)
		if len(got) != len(tc.want) {
			t.Fatalf("%d members: %d budgets, want %d", tc.members, len(got), len(tc.want))
		}
		for i, w := range tc.want {
			b := got[i].Obj.(*policyv1.PodDisruptionBudget)
			sel := b.Spec.Selector.MatchLabels
			role := sel[contract.LabelRole]
			for _, e := range b.Spec.Selector.MatchExpressions {
				if e.Key == contract.LabelRole && e.Operator == metav1.LabelSelectorOpIn {
					role = strings.Join(e.Values, ",")
				}
			}
			if b.Name != w.name || role != w.role || b.Spec.MinAvailable.IntValue() != w.min || b.Spec.MaxUnavailable != nil {
				t.Errorf("%d members: budget %d is %s role=%s minAvailable=%v, want %+v", tc.members, i, b.Name, role, b.Spec.MinAvailable, w)
			}
			if sel[contract.LabelInstance] != "pg" || sel[contract.LabelName] != contract.AppPostgres {
				t.Errorf("%d members: budget %s selects %v, not the cluster's pods", tc.members, b.Name, sel)
			}
			if p := b.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
				t.Errorf("%d members: budget %s holds pods that are not ready", tc.members, b.Name)
			}
		}
	}
}

// An etcd cluster's two budgets: the leader's, and every other member's
// (followers, and pods not labelled yet). For every size, with the leader
// kept, followers drain one at a time and a quorum stays.
func TestEtcdDisruptionBudgets(t *testing.T) {
	n := names{cluster: "e", namespace: "db", app: contract.AppEtcd}
	if got := etcdDisruptionBudgets(n, 1); len(got) != 0 {
		t.Errorf("1 member: %d budgets, want none", len(got))
	}
	// members -> the others' minAvailable.
	for members, want := range map[int]int{2: 1, 3: 1, 4: 2, 5: 3, 7: 5} {
		got := etcdDisruptionBudgets(n, members)
		if len(got) != 2 {
			t.Fatalf("%d members: %d budgets, want 2", members, len(got))
		}
		others, leader := got[0].Obj.(*policyv1.PodDisruptionBudget), got[1].Obj.(*policyv1.PodDisruptionBudget)
		notLeader := []metav1.LabelSelectorRequirement{{Key: contract.LabelRole, Operator: metav1.LabelSelectorOpNotIn, Values: []string{contract.RoleLeader}}}
		if others.Name != "e" || others.Spec.MinAvailable.IntValue() != want || !reflect.DeepEqual(others.Spec.Selector.MatchExpressions, notLeader) ||
			others.Spec.Selector.MatchLabels[contract.LabelRole] != "" {
			t.Errorf("%d members: %s minAvailable %v selector %+v, want %d over every pod not labelled leader", members, others.Name, others.Spec.MinAvailable, others.Spec.Selector, want)
		}
		if leader.Name != "e-leader" || leader.Spec.MinAvailable.IntValue() != 1 || leader.Spec.Selector.MatchLabels[contract.LabelRole] != contract.RoleLeader ||
			len(leader.Spec.Selector.MatchExpressions) != 0 {
			t.Errorf("%d members: %s minAvailable %v selector %+v, want 1 over the pod labelled leader", members, leader.Name, leader.Spec.MinAvailable, leader.Spec.Selector)
		}
		for _, b := range []*policyv1.PodDisruptionBudget{others, leader} {
			if sel := b.Spec.Selector.MatchLabels; sel[contract.LabelInstance] != "e" || sel[contract.LabelName] != contract.AppEtcd {
				t.Errorf("%d members: budget %s selects %v, not the cluster's pods", members, b.Name, sel)
			}
			if p := b.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
				t.Errorf("%d members: budget %s holds pods that are not ready", members, b.Name)
			}
		}
	}
	// Every size: with the leader labelled and kept, at most one follower
	// goes at a time, and the leader and the followers kept are a quorum.
	for members := 2; members <= 9; members++ {
		others := etcdDisruptionBudgets(n, members)[0].Obj.(*policyv1.PodDisruptionBudget)
		min := others.Spec.MinAvailable.IntValue()
		if allowed := members - 1 - min; allowed > 1 {
			t.Errorf("%d members: %d followers may go at once", members, allowed)
		}
		if kept := min + 1; kept < members/2+1 {
			t.Errorf("%d members: %d kept, fewer than a quorum", members, kept)
		}
	}
}

func TestNodeReaderObjects(t *testing.T) {
	if got := nodeReaderObjects(names{cluster: "pg", app: contract.AppPostgres}); len(got) != 0 {
		t.Errorf("no namespace: %d objects, want none", len(got))
	}
	got := nodeReaderObjects(names{cluster: "pg", namespace: "db", app: contract.AppPostgres})
	if len(got) != 2 {
		t.Fatalf("%d objects, want a ClusterRole and its binding", len(got))
	}
	role := got[0].Obj.(*rbacv1.ClusterRole)
	if role.Name != "cairn:db:pg-runtime:nodes" || len(role.Rules) != 1 || role.Rules[0].Resources[0] != "nodes" ||
		len(role.Rules[0].Verbs) != 1 || role.Rules[0].Verbs[0] != "get" {
		t.Errorf("ClusterRole %s %+v, want only get on nodes", role.Name, role.Rules)
	}
	b := got[1].Obj.(*rbacv1.ClusterRoleBinding)
	if b.RoleRef.Name != role.Name || len(b.Subjects) != 1 || b.Subjects[0].Namespace != "db" || b.Subjects[0].Name != "pg-runtime" {
		t.Errorf("binding %+v %+v, want the runtime's ServiceAccount in db", b.RoleRef, b.Subjects)
	}
}
