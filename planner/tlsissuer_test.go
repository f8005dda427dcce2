package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// etcdSpecIn is etcdSpec in namespace ns (a cert-manager issuer needs
// one).
func etcdSpecIn(t *testing.T, ns string, extra ...string) spec.Cluster {
	doc := "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e, namespace: " + ns + "}\nspec:\n  size: 3\n  version: \"3.5.21\"\n" + indent(extra)
	return decodeOne(t, doc)
}

// An etcd cluster's cert-manager issuer: taken at create, or by the
// first restart into TLS of a cluster rendered before it; refused
// without a namespace; never changed on a cluster that serves TLS.
func TestEtcdTLSIssuer(t *testing.T) {
	issuer := "tls: {issuerRef: {name: company-ca, kind: ClusterIssuer}}"
	company := &contract.IssuerRef{Name: "company-ca", Kind: contract.ClusterIssuerKind, Group: contract.CertManagerGroup}
	other := &contract.IssuerRef{Name: "other-ca", Kind: contract.IssuerKind, Group: contract.CertManagerGroup}
	serving := func(i *contract.IssuerRef) *live.Cluster {
		return with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) { c.TLS, c.TLSIssuer = contract.TLSRequire, i })
	}
	cases := []struct {
		name     string
		spec     spec.Cluster
		obs      *live.Cluster
		wantRule string
		// wantText is a part of the refusal's message.
		wantText string
		check    func(t *testing.T, p plan.Plan)
	}{
		{name: "no namespace", spec: etcdSpec(t, 3, "3.5.21", issuer), wantRule: RuleEtcdTLSIssuerNamespace, wantText: "(e-client.<namespace>.svc)"},
		{name: "no namespace on a running cluster", spec: etcdSpec(t, 3, "3.5.21", issuer), obs: serving(company), wantRule: RuleEtcdTLSIssuerNamespace},
		{name: "create", spec: etcdSpecIn(t, "db", issuer), check: func(t *testing.T, p plan.Plan) {
			if got := stepIDs(p); !slices.Equal(got, []string{"create", "seal-bootstrap"}) {
				t.Fatalf("steps %v", got)
			}
		}},
		{name: "the same issuer", spec: etcdSpecIn(t, "db", issuer), obs: serving(company), check: func(t *testing.T, p plan.Plan) {
			if len(p.Steps) != 0 {
				t.Fatalf("steps %v", stepIDs(p))
			}
			if p.Baseline == nil || p.Baseline.TLSIssuer == nil || *p.Baseline.TLSIssuer != *company {
				t.Fatalf("baseline issuer %+v", p.Baseline)
			}
		}},
		{name: "the runtime's CA, no issuer", spec: etcdSpecIn(t, "db"), obs: serving(nil), check: func(t *testing.T, p plan.Plan) {
			if len(p.Steps) != 0 {
				t.Fatalf("steps %v", stepIDs(p))
			}
		}},
		{name: "the runtime's CA to an issuer", spec: etcdSpecIn(t, "db", issuer), obs: serving(nil), wantRule: RuleEtcdTLSIssuerChange,
			wantText: "from the cairn runtime's own CA; moving to the cert-manager ClusterIssuer company-ca (cert-manager.io)"},
		{name: "another issuer", spec: etcdSpecIn(t, "db", issuer), obs: serving(other), wantRule: RuleEtcdTLSIssuerChange,
			wantText: "from the cert-manager Issuer other-ca (cert-manager.io); moving to the cert-manager ClusterIssuer company-ca"},
		{name: "the same name, another kind", spec: etcdSpecIn(t, "db", "tls: {issuerRef: {name: company-ca}}"), obs: serving(company), wantRule: RuleEtcdTLSIssuerChange},
		{name: "an issuer to the runtime's CA", spec: etcdSpecIn(t, "db"), obs: serving(company), wantRule: RuleEtcdTLSIssuerChange,
			wantText: "moving to the cairn runtime's own CA"},
		// A cluster rendered before etcd TLS takes the issuer with its
		// first restart into TLS, and only with it.
		{name: "rendered before etcd TLS", spec: etcdSpecIn(t, "db", issuer), obs: with(etcdLive(3, "3.5.21", 0), tlsMode("", false, false)), check: func(t *testing.T, p plan.Plan) {
			first := p.Steps[0].Params.RestartMember.Template
			if got := issuersOf(p); len(got) != 1 || *got[0] != *company || first.Issuer != got[0] {
				t.Fatalf("issuers of the steps %v; want only the first, company-ca", got)
			}
		}},
		{name: "rendered before etcd TLS, no issuer", spec: etcdSpecIn(t, "db"), obs: with(etcdLive(3, "3.5.21", 0), tlsMode("", false, false)), check: func(t *testing.T, p plan.Plan) {
			if len(p.Steps) != 6 || len(issuersOf(p)) != 0 {
				t.Fatalf("steps %v, issuers %v", stepIDs(p), issuersOf(p))
			}
		}},
		{name: "moving to TLS with an issuer", spec: etcdSpecIn(t, "db", issuer), obs: with(etcdLive(3, "3.5.21", 0), func(c *live.Cluster) {
			tlsMode(contract.TLSAccept, true, false)(c)
			c.TLSIssuer = company
		}), check: func(t *testing.T, p plan.Plan) {
			if len(p.Steps) != 3 || len(issuersOf(p)) != 0 {
				t.Fatalf("steps %v, issuers %v", stepIDs(p), issuersOf(p))
			}
		}},
		{name: "moving to TLS, then an issuer", spec: etcdSpecIn(t, "db", issuer), obs: with(etcdLive(3, "3.5.21", 0), tlsMode(contract.TLSAccept, true, false)),
			wantRule: RuleEtcdTLSIssuerChange},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := kinds.PlanCluster(tc.spec, tc.obs, nil)
			if tc.wantRule != "" {
				for _, r := range p.Refusals {
					if r.Rule == tc.wantRule {
						if r.Field != "spec.tls.issuerRef" || !strings.Contains(r.Reason, tc.wantText) {
							t.Fatalf("refusal %+v, want field spec.tls.issuerRef and %q", r, tc.wantText)
						}
						return
					}
				}
				t.Fatalf("refusals %v, want %s", refusalRules(p), tc.wantRule)
			}
			if got := refusalRules(p); len(got) > 0 {
				t.Fatalf("refused: %v", p.Refusals)
			}
			tc.check(t, p)
		})
	}
}

// issuersOf are the issuers the plan's restarts bring, in order; a step
// that brings none is left out.
func issuersOf(p plan.Plan) []*contract.IssuerRef {
	var out []*contract.IssuerRef
	for _, s := range p.Steps {
		if rm := s.Params.RestartMember; rm != nil && rm.Template != nil && rm.Template.Issuer != nil {
			out = append(out, rm.Template.Issuer)
		}
	}
	return out
}
