package renderer

import (
	"maps"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cairn-dev/cairn/planner/contract"
)

// postgresDisruptionBudgets make a drain of a PostgreSQL cluster's nodes
// safe (docs/runtime.md, "Drains"): two budgets whose selectors never
// overlap (the Eviction API refuses a pod two budgets select), on the
// role label the runtime keeps.
//
//   - <cluster>-primary, minAvailable 1 over the pods labelled primary or
//     fenced: the primary is never evicted while it is the primary, nor
//     while a switchover has fenced it and not yet labelled its target
//     primary (its server may still run, read-only). The runtime sees
//     its node cordoned and switches over to the most caught-up replica;
//     once the target is labelled primary, the fenced old primary may go,
//     and labelled replica it is evicted like any replica. Rendered only
//     with two members or more: a lone primary has no one to hand over
//     to, and a budget would hold its drain forever.
//   - <cluster>, over the pods labelled replica: all but one of them stay
//     (minAvailable members-2), so replicas drain one at a time.
//
// A pod with no role label (new, not yet labelled) is in neither:
// nothing holds its eviction. Both budgets let a pod that is
// not ready be evicted (unhealthyPodEvictionPolicy AlwaysAllow): a member
// that does not run never holds a drain.
func postgresDisruptionBudgets(n names, members int) []Object {
	out := []Object{disruptionBudget(n, "pdb.yaml", n.cluster, []string{contract.RoleReplica}, max(members-2, 0))}
	if members >= 2 {
		out = append(out, disruptionBudget(n, "pdb-primary.yaml", n.cluster+"-primary", []string{contract.RolePrimary, contract.RoleFenced}, 1))
	}
	return out
}

// disruptionBudget keeps minAvailable of the cluster's pods with one of
// the role labels roles (all its pods when there are none).
func disruptionBudget(n names, file, name string, roles []string, minAvailable int) Object {
	sel := &metav1.LabelSelector{MatchLabels: maps.Clone(n.selector())}
	switch len(roles) {
	case 0:
	case 1:
		sel.MatchLabels[contract.LabelRole] = roles[0]
	default:
		sel.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: contract.LabelRole, Operator: metav1.LabelSelectorOpIn, Values: roles}}
	}
	return Object{File: file, Obj: &policyv1.PodDisruptionBudget{
		TypeMeta: typeMeta("policy/v1", "PodDisruptionBudget"), ObjectMeta: n.meta(name, "database"),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:               ptr(intstr.FromInt32(int32(minAvailable))),
			Selector:                   sel,
			UnhealthyPodEvictionPolicy: ptr(policyv1.AlwaysAllow),
		},
	}}
}

// etcdDisruptionBudget keeps all members but one (never fewer than a
// quorum): members drain one at a time and the cluster keeps its quorum.
// A one-member cluster gets none: it cannot keep running through a drain
// of its node, and a budget would hold the drain forever. A member that
// is not ready may be evicted (it counts against no quorum the budget
// could keep).
func etcdDisruptionBudget(n names, members int) []Object {
	if members < 2 {
		return nil
	}
	return []Object{disruptionBudget(n, "pdb.yaml", n.cluster, nil, max(quorum(members), members-1))}
}
