package planner

import (
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// An etcd cluster rendered before TLS (its <cluster>-cairn has no tls
// key) moves to TLS in two rolling restarts, each a step per member from
// the highest ordinal down, as any template change is rolled out:
//
//  1. accept: each member serves TLS beside plain HTTP on its client port
//     (the same port: etcd tells the two apart), with the certificates
//     the runtime keeps, and loads its peer certificate, while its peers
//     still speak plain HTTP to each other. No client is cut off. The
//     restart is folded into any other template change the spec asks for
//     (etcdTemplate).
//  2. require: once the runtime has reached every member over TLS and
//     verified its certificate (the first step's before-gate), each
//     member restarts serving only TLS, admitting only clients with a
//     certificate of the cluster's CA, and listening for its peers over
//     TLS only. The runtime then changes the member's advertised peer URL
//     to https (a membership update it makes as soon as the member's peer
//     port serves the cluster's certificate), and the other members,
//     which hold their peer certificate since step 1, reach it over TLS.
//     Each step cuts plain clients off one more member, so each is
//     disruptive: a maintenance window holds it. A step cannot be undone
//     by reverting it: a member that advertises an https peer URL must
//     keep serving TLS to its peers.
//
// A cluster cairn creates requires TLS from its first start.

// refuseEtcdUnknownTLS refuses to plan for a cluster whose rendered
// config names a TLS mode cairn does not know: a person must look first.
func refuseEtcdUnknownTLS(r *Result, obs *live.Cluster) {
	if _, ok := contract.TLSMode(obs.TLS); !ok {
		r.refuse(RuleEtcdUnknownTLS, "", "the rendered config sets TLS mode %q, which cairn does not know (it knows %s); fix the cluster's %s ConfigMap first",
			obs.TLS, strings.Join(contract.TLSModes, ", "), contract.ConfigMap(obs.Name))
	}
}

// etcdTLSAccept is the TLS mode the next rolling restart brings: accept
// for a cluster rendered before TLS, "" for one that serves it.
func etcdTLSAccept(obs *live.Cluster) string {
	if mode, ok := contract.TLSMode(obs.TLS); ok && mode == contract.TLSOff {
		return contract.TLSAccept
	}
	return ""
}

// etcdTLSIssuer is the issuer a restart into mode brings: the spec's,
// taken with the move into accept, as PostgreSQL's tls-accept takes it.
func etcdTLSIssuer(c *spec.EtcdCluster, mode string) *contract.IssuerRef {
	if mode != contract.TLSAccept {
		return nil
	}
	return c.Spec.Issuer()
}

// withTLS adds the TLS mode a restart brings to a template revision's
// inputs (a map revisionInputs made for the call), so each move has a
// revision of its own; nothing when the mode stays, so the revisions of
// other restarts are what they were.
func withTLS(inputs map[string]string, mode string) map[string]string {
	if mode != "" {
		inputs[contract.KeyTLS] = mode
	}
	return inputs
}

// etcdTLSText says what a restart to mode brings, for summaries.
func etcdTLSText(mode string) string {
	if mode == contract.TLSAccept {
		return "TLS offered beside plain HTTP on the client port, with the certificates the runtime keeps, and the peer certificate loaded (no client is cut off)"
	}
	return "TLS required: the client port serves only TLS to clients with a certificate of the cluster's CA, and peers reach this member over TLS only " +
		"(the runtime changes its peer URL to https once it serves TLS); clients without such a certificate are refused by it from now on"
}

// etcdAcceptRollback is how the restart to accept is undone.
const etcdAcceptRollback = "Revert this pull request (and the merged ones after it): the members it restarted serve plain HTTP only again at their next restart; no peer depends on TLS yet."

// etcdTLSRequire plans the second restart, to require, for a cluster
// that accepts TLS once the steps planned so far are merged.
func etcdTLSRequire(r *Result, c *spec.EtcdCluster, obs *live.Cluster, m *etcdModel) {
	if etcdTLSAfter(r, obs) != contract.TLSAccept || m.size == 0 {
		return
	}
	res, _ := resourcesChange(c, obs)
	t := &plan.TemplateChange{Resources: res, TLS: contract.TLSRequire,
		Revision: contract.TemplateRevisionOf(derefResources(res), withTLS(revisionInputs(quotaInputs(c), nil, false), contract.TLSRequire))}
	rs := newRestart(obs, m.size, t, "required TLS")
	for i, ord := range rs.ordinals {
		s := etcdRestartStep(m, rs, ord)
		etcdRequireMove(&s, obs, contract.TLSRequire, ord)
		if i == 0 {
			s.Gates = append([]plan.Gate{tlsServed(plan.Before)}, s.Gates...)
		}
		r.add(s)
	}
}

// etcdRequireMove marks the restart of member ord into TLS mode mode as
// the member's move to required TLS when its peers do not reach it over
// TLS yet, whatever else the restart brings (a require restart under way,
// or another template change made meanwhile): from this restart it
// refuses plain clients, so the step is disruptive, and it advertises an
// https peer URL, so reverting the step would cut it off from its peers.
func etcdRequireMove(s *plan.Step, obs *live.Cluster, mode string, ord int) {
	if mode != contract.TLSRequire || ord < len(obs.Members) && obs.Members[ord].PeerTLS {
		return
	}
	s.Summary += "; " + etcdTLSText(contract.TLSRequire)
	// The member's peers reach it again only once the runtime has moved
	// its advertised peer URL to https: until then the next member must
	// not restart (two members that listen for their peers over TLS only
	// and advertise plain URLs reach each other by no way at all). A
	// member being ready is no proof: it dials its peers itself, and
	// etcd's streams carry their messages back.
	name := contract.MemberName(obs.Name, ord)
	s.Gates = append(s.Gates, plan.Gate{Kind: plan.GateMemberPeerTLS, When: plan.After, Member: name,
		Description: name + "'s peers reach it over TLS (its advertised peer URL is https)"})
	s.Disruptive = true
	s.Reversible = false
	s.Rollback = "Not by reverting this pull request: the member advertises an https peer URL from now on, which it would no longer serve without TLS. " +
		"Clients that cannot present a certificate of the cluster's CA must get one (the runtime keeps the CA the cluster trusts in the " +
		contract.ServerTLSSecret(obs.Name) + " Secret's " + contract.TLSKeyCA + ")."
}

// etcdTLSAfter is the cluster's TLS mode once the steps planned so far
// are merged: that of the last restart that changes it, or the running
// one.
func etcdTLSAfter(r *Result, obs *live.Cluster) string {
	mode, _ := contract.TLSMode(obs.TLS)
	for _, s := range r.Steps {
		if rm := s.Params.RestartMember; rm != nil && rm.Template != nil && rm.Template.TLS != "" {
			mode = rm.Template.TLS
		}
	}
	return mode
}
