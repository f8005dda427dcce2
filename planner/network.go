package planner

import (
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// networkStep restricts a running cluster's network by a reviewed step:
// the NetworkPolicy that admits to the members only each other, the
// runtime and the pods carrying the cluster's client label. A cluster
// created by cairn has it from its first start (the create step renders
// it), and no step goes back: the spec has no way to ask for less.
//
// It is disruptive: a client without the label is cut off once the
// policy applies (where the cluster's network enforces NetworkPolicies),
// so a maintenance window holds it and its pull request says which label
// clients need.
func networkStep(r *Result, kind string, obs *live.Cluster) {
	mode, ok := contract.NetworkMode(obs.Network)
	if !ok {
		r.refuse(RuleUnknownNetwork, "", "the rendered config sets network mode %q, which cairn does not know (it knows %s); fix the cluster's %s ConfigMap first",
			obs.Network, strings.Join(contract.NetworkModes, ", "), contract.ConfigMap(obs.Name))
		return
	}
	if mode == contract.NetworkRestricted {
		return
	}
	label := contract.ClientLabel(obs.Name)
	r.add(plan.Step{
		ID:   "network-restrict",
		Kind: plan.RestrictNetwork,
		Summary: "Admit to the " + kind + " members only each other, the cluster's runtime and pods of its namespace labelled " +
			label + "=" + contract.ClientLabelValue + " (a NetworkPolicy; no member restarts)",
		Disruptive: true,
		Reversible: true,
		Rollback:   "Revert this pull request: the NetworkPolicy is removed and every pod may reach the members again.",
		Gates:      []plan.Gate{healthyBefore(), healthyAfter()},
		Params:     plan.Params{RestrictNetwork: &plan.RestrictNetworkParams{Policy: contract.NetworkPolicy(obs.Name), ClientLabel: label}},
	})
}
