package planner

import (
	"slices"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// A cluster rendered before TLS moves to it in two reviewed steps, each a
// reload: first the servers offer TLS, then pg_hba requires it, once the
// runtime has verified every member's certificate.
func TestPostgresTLSPlans(t *testing.T) {
	params := map[string]string{"work_mem": "'8MB'"}
	cases := []struct {
		name      string
		tls       string
		served    bool
		edit      func(c *live.Cluster)
		extra     []string
		wantSteps []string
		wantRule  string
	}{
		{name: "rendered before TLS", tls: "", wantSteps: []string{"tls-accept", "tls-require"}},
		{name: "accepting, not yet served", tls: contract.TLSAccept, wantSteps: []string{"tls-require"}},
		{name: "accepting and served", tls: contract.TLSAccept, served: true, wantSteps: []string{"tls-require"}},
		{name: "required", tls: contract.TLSRequire, served: true, wantSteps: nil},
		{name: "unknown mode", tls: "sometimes", wantRule: RulePostgresUnknownTLS},
		{name: "after a parameter reload", tls: "", extra: []string{"postgresql:", "  parameters:", "    work_mem: 16MB"},
			wantSteps: []string{"reload-parameters-" + contract.ConfigRevisionWithTLS(map[string]string{"work_mem": "'16MB'"}, ""), "tls-accept", "tls-require"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := with(pgLive(3, "14.5", 0), func(c *live.Cluster) {
				c.TLS, c.Parameters = tc.tls, params
				c.ConfigRevision = contract.ConfigRevisionWithTLS(params, tc.tls)
				for i := range c.Members {
					c.Members[i].TLS, c.Members[i].ConfigRevision = tc.served, c.ConfigRevision
				}
			})
			extra := tc.extra
			if extra == nil {
				extra = []string{"postgresql:", "  parameters:", "    work_mem: 8MB"}
			}
			p := kinds.PlanCluster(pgSpec(t, 3, "14.5", extra...), obs, nil)
			if tc.wantRule != "" {
				if got := refusalRules(p); !slices.Contains(got, tc.wantRule) {
					t.Fatalf("refusals %v, want %s", got, tc.wantRule)
				}
				return
			}
			if got := stepIDs(p); !slices.Equal(got, tc.wantSteps) {
				t.Fatalf("steps %v, want %v", got, tc.wantSteps)
			}
			for _, id := range tc.wantSteps {
				if id != "tls-accept" && id != "tls-require" {
					continue
				}
				s := step(t, p, id)
				to := contract.TLSAccept
				if id == "tls-require" {
					to = contract.TLSRequire
				}
				tp := s.Params.PostgresConfigureTLS
				want := contract.ConfigRevisionWithTLS(paramsOf(p, params), to)
				if tp == nil || tp.To != to || tp.Revision != want {
					t.Fatalf("%s: params %+v, want to %s at revision %s", id, tp, to, want)
				}
				if !s.Reversible || !hasGate(s, plan.GateConfigApplied, plan.After) {
					t.Errorf("%s: reversible %v, gates %+v", id, s.Reversible, s.Gates)
				}
				// Requiring TLS waits until every member is seen serving it.
				if id == "tls-require" && !hasGate(s, plan.GateTLSServed, plan.Before) {
					t.Errorf("tls-require has no TLSServed before-gate: %+v", s.Gates)
				}
				// Plain clients fail from tls-require on: a maintenance
				// window holds it; tls-accept breaks none.
				if s.Disruptive != (id == "tls-require") {
					t.Errorf("%s: disruptive %v", id, s.Disruptive)
				}
				if id == "tls-accept" && !hasGate(s, plan.GateTLSServed, plan.After) {
					t.Errorf("tls-accept has no TLSServed after-gate: %+v", s.Gates)
				}
			}
		})
	}
}

// paramsOf are the parameters the plan's last parameter step renders, or
// the running ones.
func paramsOf(p plan.Plan, running map[string]string) map[string]string {
	for _, s := range p.Steps {
		if pc := s.Params.PostgresReloadParameters; pc != nil {
			running = pc.To
		}
	}
	return running
}

// Every revision a TLS mode gives differs from the plain one, and off is
// the revision configs rendered before TLS carry.
func TestConfigRevisionWithTLS(t *testing.T) {
	params := map[string]string{"work_mem": "'8MB'"}
	off := contract.ConfigRevisionWithTLS(params, contract.TLSOff)
	if off != contract.ConfigRevisionOf(params) || contract.ConfigRevisionWithTLS(params, "") != off {
		t.Fatalf("off revision %s differs from the plain one %s", off, contract.ConfigRevisionOf(params))
	}
	seen := map[string]string{off: contract.TLSOff}
	for _, mode := range []string{contract.TLSAccept, contract.TLSRequire} {
		rev := contract.ConfigRevisionWithTLS(params, mode)
		if prev, dup := seen[rev]; dup {
			t.Fatalf("%s and %s share revision %s", mode, prev, rev)
		}
		seen[rev] = mode
	}
}

// pgSpecIn is pgSpec in namespace ns (a cert-manager issuer needs one).
func pgSpecIn(t *testing.T, ns string, extra ...string) spec.Cluster {
	doc := "apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: pg, namespace: " + ns + "}\nspec:\n  version: \"14.5\"\n  instances: 3\n  storage: 10Gi\n" + indent(extra)
	return decodeOne(t, doc)
}

// A cert-manager issuer: taken at create and by tls-accept, refused
// without a namespace, and never changed on a cluster that serves TLS.
func TestPostgresTLSIssuer(t *testing.T) {
	issuer := "tls: {issuerRef: {name: company-ca, kind: ClusterIssuer}}"
	company := &contract.IssuerRef{Name: "company-ca", Kind: contract.ClusterIssuerKind, Group: contract.CertManagerGroup}
	other := &contract.IssuerRef{Name: "other-ca", Kind: contract.IssuerKind, Group: contract.CertManagerGroup}
	cases := []struct {
		name     string
		spec     spec.Cluster
		obs      *live.Cluster
		wantRule string
		check    func(t *testing.T, p plan.Plan)
	}{
		{name: "no namespace", spec: pgSpec(t, 3, "14.5", issuer), wantRule: RulePostgresTLSIssuerNamespace},
		{name: "create", spec: pgSpecIn(t, "db", issuer), check: func(t *testing.T, p plan.Plan) {
			if got := stepIDs(p); len(got) == 0 || got[0] != "create" {
				t.Fatalf("steps %v", got)
			}
		}},
		{name: "rendered before TLS: tls-accept takes the issuer", spec: pgSpecIn(t, "db", issuer),
			obs: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.TLS = "" }), check: func(t *testing.T, p plan.Plan) {
				if got := step(t, p, "tls-accept").Params.PostgresConfigureTLS.Issuer; got == nil || *got != *company {
					t.Fatalf("tls-accept issuer %+v", got)
				}
			}},
		{name: "the same issuer", spec: pgSpecIn(t, "db", issuer),
			obs: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.TLSIssuer = company }), check: func(t *testing.T, p plan.Plan) {
				if len(p.Steps) != 0 {
					t.Fatalf("steps %v", stepIDs(p))
				}
			}},
		{name: "the runtime's CA to an issuer", spec: pgSpecIn(t, "db", issuer), obs: pgLive(3, "14.5", 0), wantRule: RulePostgresTLSIssuerChange},
		{name: "another issuer", spec: pgSpecIn(t, "db", issuer),
			obs: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.TLSIssuer = other }), wantRule: RulePostgresTLSIssuerChange},
		{name: "an issuer to the runtime's CA", spec: pgSpecIn(t, "db"),
			obs: with(pgLive(3, "14.5", 0), func(c *live.Cluster) { c.TLSIssuer = company }), wantRule: RulePostgresTLSIssuerChange},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := kinds.PlanCluster(tc.spec, tc.obs, nil)
			got := refusalRules(p)
			if tc.wantRule != "" {
				if !slices.Contains(got, tc.wantRule) {
					t.Fatalf("refusals %v, want %s", got, tc.wantRule)
				}
				return
			}
			if len(got) > 0 {
				t.Fatalf("refused: %v", p.Refusals)
			}
			tc.check(t, p)
		})
	}
}
