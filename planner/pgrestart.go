package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// hotStandbyDefaults are the defaults of the hot-standby parameters, for
// a parameter removed from the spec (PostgreSQL 13-18 agree on them).
var hotStandbyDefaults = map[string]int{
	"max_connections": 100, "max_prepared_transactions": 0, "max_locks_per_transaction": 64,
	"max_wal_senders": 10, "max_worker_processes": 8,
}

// pgTemplate plans what brings the members' pods and config to the spec:
// a reload step for parameters a reload applies, or a rolling restart for
// new resources and parameters that need one; and the rest of a rolling
// restart under way.
func pgTemplate(r *Result, c *spec.PostgresCluster, obs *live.Cluster, m *pgModel, images map[string]string) {
	res, resChanged := resourcesChange(c, obs)
	from, to := obs.Parameters, c.Spec.RenderedParameters()
	changed := changedParameters(from, to)
	newImages, imagesText := imagesChange(r, obs, images)
	harden := hardenChange(obs)
	if !resChanged && len(changed) == 0 && newImages == nil && !harden {
		if rs := resumeRestart(obs, m.size); rs != nil {
			rs.config = obs.ConfigRevision
			rideRoll(r, rs, m.size)
			pgRestart(r, m, rs)
		}
		return
	}
	pc := &plan.ParameterChange{From: from, To: to}
	if len(changed) > 0 {
		pc.Revision = contract.ConfigRevisionWithTLS(to, obs.TLS)
		for _, k := range changed {
			if spec.ParameterNeedsRestart(k, m.version.Major) {
				pc.Restart = append(pc.Restart, k)
			}
		}
	}
	raised, lowered := hotStandbyDirection(from, to)
	if len(raised) > 0 && len(lowered) > 0 {
		r.refuse(RulePostgresHotStandbyMixed, "spec.postgresql.parameters",
			"this change raises %s and lowers %s: a standby needs these at least as high as its primary, so raising restarts the replicas first and lowering restarts the primary first; no order is safe for both. Change them in two spec edits, one direction each",
			strings.Join(raised, ", "), strings.Join(lowered, ", "))
		return
	}
	if !resChanged && len(pc.Restart) == 0 && newImages == nil && !harden {
		pgReload(r, pc)
		return
	}
	t := &plan.TemplateChange{Resources: res, ReadOnlyRoot: harden, Revision: pgRevision(c, res, m.version.Major, newImages, harden)}
	var what []string
	if resChanged {
		what = append(what, "resources "+resourcesText(res))
	}
	if newImages != nil {
		what = append(what, imagesText)
	}
	if harden {
		what = append(what, hardenText)
	}
	if len(changed) > 0 {
		t.Parameters = pc
		what = append(what, "parameters "+parametersText(from, to))
	}
	rs := newRestart(obs, m.size, t, strings.Join(what, "; "))
	rs.config = pc.Revision
	rs.primaryFirst = len(lowered) > 0
	rideRoll(r, rs, m.size)
	pgRestart(r, m, rs)
}

// pgRevision is the pod template revision of spec c's template with
// resources res on a server of major, with images changed and read-only
// roots brought (harden): the one home of what a PostgreSQL revision
// hashes, for the create step and every rolling restart.
func pgRevision(c *spec.PostgresCluster, res *contract.Resources, major int, images map[string]string, harden bool) string {
	return contract.TemplateRevisionOf(derefResources(res), revisionInputs(restartSubset(c.Spec.RenderedParameters(), major), images, harden))
}

func derefResources(r *contract.Resources) contract.Resources {
	if r == nil {
		return contract.Resources{}
	}
	return *r
}

// restartSubset are the parameters of to that take effect only at a
// restart: a change to them is a change to the template's revision.
func restartSubset(to map[string]string, major int) map[string]string {
	out := map[string]string{}
	for k, v := range to {
		if spec.ParameterNeedsRestart(k, major) {
			out[k] = v
		}
	}
	return out
}

// hotStandbyDirection lists the hot-standby parameters a change raises
// and those it lowers.
func hotStandbyDirection(from, to map[string]string) (raised, lowered []string) {
	for _, k := range changedParameters(from, to) {
		def, ok := hotStandbyDefaults[k]
		if !ok {
			continue
		}
		a, b := intParam(from[k], def), intParam(to[k], def)
		switch {
		case b > a:
			raised = append(raised, k)
		case b < a:
			lowered = append(lowered, k)
		}
	}
	return raised, lowered
}

// intParam reads an integer parameter as rendered ('200'); def when unset.
func intParam(v string, def int) int {
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.Trim(v, "'"))
	if err != nil {
		return def
	}
	return n
}

// pgReload changes parameters a reload applies: one step, no restart.
func pgReload(r *Result, pc *plan.ParameterChange) {
	r.add(plan.Step{
		ID:         "reload-parameters-" + pc.Revision,
		Kind:       plan.PostgresReloadParameters,
		Summary:    "Change PostgreSQL parameters " + parametersText(pc.From, pc.To) + " on every member (a reload, no restart)",
		Reversible: true,
		Rollback:   "Set spec.postgresql.parameters back: cairn plans the old values as another reload.",
		Gates: []plan.Gate{healthyBefore(),
			{Kind: plan.GateConfigApplied, When: plan.After, Revision: pc.Revision, Description: "every member has loaded config revision " + pc.Revision + " and nothing waits for a restart"},
			healthyAfter()},
		Params: plan.Params{PostgresReloadParameters: pc},
	})
}

// pgRestart restarts the members of rs one at a time, replicas first: at
// the primary's turn it hands its role to a member that already
// restarted. When rs.primaryFirst, the primary restarts first instead, in
// place, after moving it to the member the partition reaches first.
func pgRestart(r *Result, m *pgModel, rs *restart) {
	purpose := "for-restart-" + rs.revision
	done := map[int]bool{}
	if len(rs.ordinals) > 0 {
		for ord := rs.ordinals[0] + 1; ord < m.size; ord++ {
			done[ord] = true // above the members to restart: they run the revision
		}
	}
	for i, ord := range rs.ordinals {
		switch {
		case m.size == 1:
		case i == 0 && rs.primaryFirst:
			if m.primary != ord {
				pgSwitchover(r, m, ord, purpose, "so the primary restarts first: a standby needs lowered hot-standby parameters no higher than its primary's")
			}
		case m.primary == ord:
			to, ok := restartedTarget(done, ord)
			if !ok {
				// The primary is the first to restart: hand it to the
				// member that restarts last, which hands it on at its turn.
				to = rs.ordinals[len(rs.ordinals)-1]
			}
			pgSwitchover(r, m, to, purpose, "so the primary does not restart under its clients")
		}
		r.add(pgRestartStep(m, rs, ord))
		done[ord] = true
	}
}

// restartedTarget is the member to hand the primary to: the nearest one
// above ord that already restarted, or the highest one below it.
func restartedTarget(done map[int]bool, ord int) (int, bool) {
	above, below := -1, -1
	for o := range done {
		switch {
		case o > ord && (above < 0 || o < above):
			above = o
		case o < ord && o > below:
			below = o
		}
	}
	if above >= 0 {
		return above, true
	}
	return below, below >= 0
}

func pgRestartStep(m *pgModel, rs *restart, ord int) plan.Step {
	name := contract.MemberName(m.name, ord)
	primary := ord == m.primary
	s := rs.step(m.name, ord, m.size, "replica ", primary || m.size-2 < m.sync)
	after := memberGate(plan.GateReplicaStreaming, plan.After, name, name+" streams from the primary")
	switch {
	case primary && m.size == 1:
		s.Summary = fmt.Sprintf("Restart the only member %s with %s; the database is down while it restarts", name, rs.reason)
		after = memberGate(plan.GatePrimary, plan.After, name, name+" is the primary")
	case primary:
		s.Summary = fmt.Sprintf("Restart the primary %s in place with %s; the database is down while it restarts (standbys need lowered hot-standby parameters after their primary)", name, rs.reason)
		after = memberGate(plan.GatePrimary, plan.After, name, name+" is the primary")
	case s.Disruptive:
		s.Summary += fmt.Sprintf("; commits wait while it restarts (%d synchronous standby(s) wanted)", m.sync)
	}
	s.Gates = append(s.Gates,
		plan.Gate{Kind: plan.GateMemberRestarted, When: plan.After, Member: name, Revision: rs.revision, Description: name + " runs pod template revision " + rs.revision},
		after)
	if cr := rs.config; cr != "" {
		s.Gates = append(s.Gates, plan.Gate{Kind: plan.GateConfigApplied, When: plan.After, Member: name, Revision: cr,
			Description: name + " has loaded config revision " + cr + " and nothing waits for a restart"})
	}
	s.Gates = append(s.Gates, healthyAfter())
	return s
}
