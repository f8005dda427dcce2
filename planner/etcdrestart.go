package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// etcdTemplate plans the rolling restart that brings new resources to
// every member, or the rest of one under way.
func etcdTemplate(r *Result, c *spec.EtcdCluster, obs *live.Cluster, m *etcdModel, images map[string]string) {
	res, changed := resourcesChange(c, obs)
	newImages, imagesText := imagesChange(r, obs, images)
	quota, quotaChanged := quotaChange(c, obs)
	harden := hardenChange(obs)
	tlsTo := etcdTLSAccept(obs) // etcdtls.go
	var rs *restart
	if changed || newImages != nil || quotaChanged || harden || tlsTo != "" {
		t := &plan.TemplateChange{Resources: res, SpaceQuota: quota, ReadOnlyRoot: harden, TLS: tlsTo, Issuer: etcdTLSIssuer(c, tlsTo),
			Revision: etcdRevision(c, res, newImages, harden, tlsTo)}
		var what []string
		if changed {
			what = append(what, "resources "+resourcesText(res))
		}
		if newImages != nil {
			what = append(what, imagesText)
		}
		if quotaChanged {
			what = append(what, quotaText(obs, quota))
		}
		if harden {
			what = append(what, hardenText)
		}
		if tlsTo != "" {
			what = append(what, etcdTLSText(tlsTo))
		}
		rs = newRestart(obs, m.size, t, strings.Join(what, "; "))
	} else {
		rs = resumeRestart(obs, m.size)
	}
	if rs == nil {
		return
	}
	mode := tlsTo
	if mode == "" {
		mode, _ = contract.TLSMode(obs.TLS)
	}
	if tlsTo == "" && !slices.ContainsFunc(r.Steps, movesBack) {
		all := slices.Clone(rs.ordinals)
		rideRoll(r, rs, m.size) // ride.go
		for _, ord := range all {
			// A member the upgrade restarts for the template moves to
			// required TLS at that restart, as its own restart would.
			if i := slices.IndexFunc(r.Steps, func(s plan.Step) bool {
				return s.Kind == plan.UpgradeMember && s.Params.UpgradeMember.Ordinal == ord
			}); i >= 0 && !slices.Contains(rs.ordinals, ord) {
				s := &r.Steps[i]
				irreversible, rollback := !s.Reversible, s.Rollback
				etcdRequireMove(s, obs, mode, ord)
				if irreversible && s.Rollback != rollback {
					s.Rollback = rollback + " " + s.Rollback
				}
			}
		}
	}
	for _, ord := range rs.ordinals {
		s := etcdRestartStep(m, rs, ord)
		if tlsTo == contract.TLSAccept {
			s.Rollback = etcdAcceptRollback
		}
		etcdRequireMove(&s, obs, mode, ord) // etcdtls.go
		r.add(s)
	}
}

// movesBack: a step of an etcd downgrade, or one that moves a member
// back to an older version; such a roll takes no template change along.
func movesBack(s plan.Step) bool {
	if s.Kind == plan.EtcdDowngrade {
		return true
	}
	u := s.Params.UpgradeMember
	if u == nil {
		return false
	}
	from, ferr := spec.ParseRelease(u.From, 3)
	to, terr := spec.ParseRelease(u.To, 3)
	return ferr != nil || terr != nil || to.Compare(from) < 0
}

// etcdRevision is the pod template revision of spec c's template with
// resources res, images changed, read-only roots brought (harden) and
// TLS moved to tlsTo ("" for none): the one home of what an etcd
// revision hashes, for the create step and every rolling restart.
func etcdRevision(c *spec.EtcdCluster, res *contract.Resources, images map[string]string, harden bool, tlsTo string) string {
	return contract.TemplateRevisionOf(derefResources(res), withTLS(revisionInputs(quotaInputs(c), images, harden), tlsTo))
}

// etcdRestartStep restarts one member; the others keep quorum while it
// is down (from 3 members on).
func etcdRestartStep(m *etcdModel, rs *restart, ord int) plan.Step {
	name := contract.MemberName(m.name, ord)
	s := rs.step(m.name, ord, m.size, "", m.size < 3)
	if m.size < 3 {
		s.Summary += fmt.Sprintf("; with %d member(s) the restart stops the cluster until it is back", m.size)
	}
	s.Gates = append(s.Gates,
		plan.Gate{Kind: plan.GateMemberRestarted, When: plan.After, Member: name, Revision: rs.revision, Description: name + " runs pod template revision " + rs.revision},
		memberGate(plan.GateMemberReady, plan.After, name, name+" is ready"),
		healthyAfter())
	return s
}
