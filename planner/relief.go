package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/plan"
)

// A step planned to relieve a fault is gated on what it needs, not on the
// health the fault takes away: a full-health gate would hold the fix
// until the fault it fixes is gone. Such steps:
//
//   - etcd under NOSPACE (etcdmaint.go): etcd answers /health false on
//     every member while the alarm is raised, so no member is ready. The
//     space quota raise's rolling restart needs quorum (GateQuorum) before
//     each member restarts, and after it the member back in its role with
//     the new template (GateMemberRejoined), ready or not.
//   - PostgreSQL with a member down (pgrelief.go): commits wait for a
//     synchronous standby that is not there; lowering the number the spec
//     lowers is a reload that needs only the primary (GatePrimary).
//   - a storage growth while the plan waits (common.go): an online PVC
//     expansion needs no member ready.
//
// relieve re-gates s so: its gates that judge readiness (ClusterHealthy,
// MemberReady) give way to needs, a MemberRestarted gate becomes
// MemberRejoined, and its summary says while what it is planned, why it
// relieves it and what it waits for instead, which the pull request
// shows.
func relieve(s *plan.Step, while, why string, needs ...plan.Gate) {
	var before, after, kept []plan.Gate
	for _, g := range needs {
		if g.When == plan.Before {
			before = append(before, g)
		} else {
			after = append(after, g)
		}
	}
	for _, g := range s.Gates {
		switch g.Kind {
		case plan.GateClusterHealthy, plan.GateMemberReady:
			continue
		case plan.GateMemberRestarted:
			g.Kind = plan.GateMemberRejoined
			g.Description = fmt.Sprintf("%s runs pod template revision %s and is back in its role, ready or not", g.Member, g.Revision)
		}
		kept = append(kept, g)
	}
	// Window gates stay first, as addWindowGates puts them.
	i := slices.IndexFunc(kept, func(g plan.Gate) bool { return g.Kind != plan.GateMaintenanceWindow })
	if i < 0 {
		i = len(kept)
	}
	gates := slices.Concat(kept[:i], before, kept[i:], after)
	if gates == nil {
		gates = []plan.Gate{}
	}
	s.Gates = gates
	s.Summary += fmt.Sprintf("; planned while %s: %s. %s", while, why, waitsFor(before))
}

// waitsFor says what a relieving step waits for before it starts.
func waitsFor(before []plan.Gate) string {
	if len(before) == 0 {
		return "It needs no member to be ready"
	}
	d := make([]string, len(before))
	for i, g := range before {
		d[i] = g.Description
	}
	return "It waits only until " + strings.Join(d, " and ") + ", not for every member to be ready"
}

// quorumGate is what a step that relieves an etcd fault needs: a quorum
// of voters that answer, ready or not; without member, when it is set
// (the member the step restarts).
func quorumGate(when plan.Phase, member string) plan.Gate {
	if member == "" {
		return gate(plan.GateQuorum, when, "a quorum of the voting members answers, ready or not")
	}
	return memberGate(plan.GateQuorum, when, member, "a quorum of the voting members besides "+member+" answers, ready or not (it keeps quorum while that member restarts)")
}
