package renderer

import (
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

func TestEtcdDisruptionBudget(t *testing.T) {
	n := names{cluster: "e", namespace: "db", app: contract.AppEtcd}
	// members -> minAvailable (-1: no budget): one at a time, never below quorum.
	for members, want := range map[int]int{1: -1, 2: 2, 3: 2, 4: 3, 5: 4, 7: 6} {
		got := etcdDisruptionBudget(n, members)
		if want < 0 {
			if len(got) != 0 {
				t.Errorf("%d members: a budget, want none", members)
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("%d members: %d budgets, want 1", members, len(got))
		}
		b := got[0].Obj.(*policyv1.PodDisruptionBudget)
		if b.Spec.MinAvailable.IntValue() != want || b.Spec.Selector.MatchLabels[contract.LabelRole] != "" {
			t.Errorf("%d members: minAvailable %v selector %v, want %d over every member", members, b.Spec.MinAvailable, b.Spec.Selector.MatchLabels, want)
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
