package planner

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// A person's switchover (spec.switchover) is a one-shot request, not a
// standing wish: the step that serves it also records its ID in the
// rendered config (contract.KeySwitchoverServed), which every later step
// renders again, so the request is planned once, whoever is primary
// later. A standing "primary: X" would have the planner move the primary
// back after every failover the runtime makes, fighting it.

// switchoverField is the spec field of the request.
const switchoverField = "spec.switchover"

// pgRequested plans spec.switchover first in the plan, before any other
// change: a person asks for it to move the primary now (off a node
// before its maintenance, say). A request served already, or whose
// target is the primary already, plans nothing and the plan says so in a
// note. later is true when the target is a member the plan adds: the
// request is planned after it (pgRequestedSwitchover).
func pgRequested(r *Result, c *spec.PostgresCluster, obs *live.Cluster, m *pgModel) (later bool) {
	req := c.Spec.Switchover
	if req == nil {
		return false
	}
	to, ok := contract.MemberOrdinal(m.name, req.To)
	switch {
	case !ok:
		// Validation refuses it before any plan; a planner given an
		// unvalidated spec says so rather than guess.
		r.refuse(RuleSwitchoverTarget, switchoverField+".to", "%s is not a member of %s", req.To, m.name)
		return false
	case obs.SwitchoverServed == req.ID:
		r.Notes = append(r.Notes, plan.Note{Field: switchoverField, Reason: fmt.Sprintf(
			"request %s is served: its step (switchover to %s) was merged, and the rendered config records it; that step's pull request says when the runtime has switched over. It is not planned again, whoever is primary (now %s); to switch over again, write a new id (cairn switchover), or remove spec.switchover",
			req.ID, req.To, pgPrimaryName(obs))})
		return false
	case to == m.primary:
		r.Notes = append(r.Notes, plan.Note{Field: switchoverField, Reason: fmt.Sprintf(
			"request %s plans nothing: %s is the primary already. While the request stays in the spec unserved, cairn plans it should %s stop being the primary; remove spec.switchover to drop it",
			req.ID, req.To, req.To)})
		return false
	case to >= m.size:
		return true
	}
	pgRequestedSwitchover(r, c, m)
	return false
}

// pgRequestedSwitchover adds the step that serves spec.switchover: the
// switchover the upgrades plan, under an ID of its own that names the
// request, and with the request's ID as the one it serves.
func pgRequestedSwitchover(r *Result, c *spec.PostgresCluster, m *pgModel) {
	req := c.Spec.Switchover
	to, _ := contract.MemberOrdinal(m.name, req.To)
	if to == m.primary {
		return // the steps before it made it the primary
	}
	s := pgSwitchoverStep(m, to, fmt.Sprintf("switchover-to-%d-%s", to, req.ID),
		fmt.Sprintf("as spec.switchover asks (request %s)", req.ID))
	s.Params.PostgresSwitchover.Request = req.ID
	r.add(s)
	m.primary = to
}

// pgPrimaryName is the member the runtime reports primary, or "none".
func pgPrimaryName(obs *live.Cluster) string {
	for _, mem := range obs.Members {
		if mem.Role == live.RolePrimary {
			return mem.Name
		}
	}
	return "none"
}
