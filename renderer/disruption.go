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
	out := []Object{disruptionBudget(n, "pdb.yaml", n.cluster, roleIn(contract.RoleReplica), max(members-2, 0))}
	if members >= 2 {
		out = append(out, disruptionBudget(n, "pdb-primary.yaml", n.cluster+"-primary", roleIn(contract.RolePrimary, contract.RoleFenced), 1))
	}
	return out
}

// disruptionBudget keeps minAvailable of the cluster's pods whose role
// label matches roles: one role In is a plain label match.
func disruptionBudget(n names, file, name string, roles metav1.LabelSelectorRequirement, minAvailable int) Object {
	sel := &metav1.LabelSelector{MatchLabels: maps.Clone(n.selector())}
	roles.Key = contract.LabelRole
	if roles.Operator == metav1.LabelSelectorOpIn && len(roles.Values) == 1 {
		sel.MatchLabels[contract.LabelRole] = roles.Values[0]
	} else {
		sel.MatchExpressions = []metav1.LabelSelectorRequirement{roles}
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

// roleIn and roleNotIn select pods by their role label.
func roleIn(roles ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Operator: metav1.LabelSelectorOpIn, Values: roles}
}

func roleNotIn(roles ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Operator: metav1.LabelSelectorOpNotIn, Values: roles}
}

// etcdDisruptionBudgets make a drain of an etcd cluster's nodes keep
// its quorum and hand leadership over before the leader goes
// (docs/runtime.md, "Drains"): two budgets whose selectors never overlap,
// on the role label the runtime keeps.
//
//   - <cluster>-leader, minAvailable 1 over the pod labelled leader: the
//     leader is not evicted while it leads. The runtime, seeing its node
//     cordoned, moves leadership to a member on another node and labels
//     both anew; the old leader then goes as a follower. A leader that
//     cannot hand over (no healthy member on an uncordoned node, a
//     membership change in flight) is labelled follower, and goes as any
//     member does, the others electing a new leader.
//   - <cluster>, over every other pod (labelled follower, or not yet
//     labelled): minAvailable max(quorum-1, members-2), so that members
//     drain one at a time and, with the leader kept, a quorum stays.
//
// A one-member cluster gets none: it cannot keep running through a drain
// of its node, and a budget would hold the drain forever. A member that
// is not ready may be evicted (it counts against no quorum the budgets
// could keep).
func etcdDisruptionBudgets(n names, members int) []Object {
	if members < 2 {
		return nil
	}
	return []Object{
		disruptionBudget(n, "pdb.yaml", n.cluster, roleNotIn(contract.RoleLeader), max(quorum(members)-1, members-2)),
		disruptionBudget(n, "pdb-leader.yaml", n.cluster+"-leader", roleIn(contract.RoleLeader), 1),
	}
}
