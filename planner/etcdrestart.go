package planner

import (
	"fmt"
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
	for _, ord := range rs.ordinals {
		s := etcdRestartStep(m, rs, ord)
		if tlsTo == contract.TLSAccept {
			s.Rollback = etcdAcceptRollback
		}
		etcdRequireMove(&s, obs, mode, ord) // etcdtls.go
		r.add(s)
	}
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
