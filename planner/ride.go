package planner

import (
	"slices"

	"github.com/cairn-dev/cairn/planner/plan"
)

// Fewest disruptions: a rolling restart and a rolling upgrade planned in
// one pass share it. Each member restarts once, for both, and a
// PostgreSQL primary moves once (pgRoll's switchover), where two passes
// would restart every member twice and switch over twice. The first step of the upgrade, which
// changes the template's version, changes the rest of the template too
// (UpgradeMemberParams.Template), and its summary says what; every member
// the upgrade restarts is then also gated on running the new template
// revision.
//
// What must stay apart stays apart: an etcd restart that moves TLS, and
// any template change during an etcd downgrade (etcdTemplate); a restart
// that lowers hot-standby
// parameters restarts the primary first, against the upgrade's order
// (replicas first); a major upgrade is no rolling pass (pgMajor), and the
// restart follows it; an upgrade that does not start at the top member in
// this plan (one under way, or one after a new replica that set the
// template's version already) would have the StatefulSet restart the
// members above its partition for the new template on its own, so it
// takes the template change in a pass of its own.

// rideRoll folds rs into the rolling upgrade steps already in r, the
// members of the cluster's size. A template change rides the upgrade's
// first step when that step starts at the top member and the upgrade
// restarts every member rs does; without a template change (a restart
// under way), the members the upgrade restarts get the template as it is
// and need no restart of their own. The members left in rs are those no
// upgrade step restarts.
func rideRoll(r *Result, rs *restart, size int) {
	var ups []int
	covered := map[int]bool{}
	for i, s := range r.Steps {
		if s.Kind == plan.UpgradeMember {
			ups = append(ups, i)
			covered[s.Params.UpgradeMember.Ordinal] = true
		}
	}
	if len(ups) == 0 || rs.primaryFirst {
		return
	}
	if rs.template != nil {
		first := &r.Steps[ups[0]]
		u := first.Params.UpgradeMember
		if u.Ordinal != size-1 || u.Template != nil || slices.ContainsFunc(rs.ordinals, func(o int) bool { return !covered[o] }) {
			return
		}
		u.Template, rs.template = rs.template, nil
		first.Summary += "; this step also changes the pod template (" + rs.reason + "): each member restarts once, for both, one per step"
		first.Rollback += " The template changes it brings go back as they came, when the spec sets them back."
	}
	left := rs.ordinals[:0:0]
	for _, o := range rs.ordinals {
		if !covered[o] {
			left = append(left, o)
		}
	}
	for _, i := range ups {
		name := r.Steps[i].Params.UpgradeMember.Member
		r.Steps[i].Gates = append(r.Steps[i].Gates, plan.Gate{Kind: plan.GateMemberRestarted, When: plan.After, Member: name, Revision: rs.revision,
			Description: name + " runs pod template revision " + rs.revision})
	}
	rs.ordinals = left
}
