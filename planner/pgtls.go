package planner

import (
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// pgTLS moves a running cluster to TLS one mode at a time, each a step
// of its own and a reload, no restart (PostgreSQL loads ssl and pg_hba at
// a reload):
//
//  1. accept: the servers serve TLS with the certificates the runtime
//     keeps, the superuser over TLS only by its client certificate, and
//     every plain connection still admitted, so no client breaks yet;
//  2. require: pg_hba admits nothing but TLS from the network. Its
//     before-gate waits until the runtime has reached every member over
//     TLS and verified its certificate, so no member is cut off by it.
//
// A cluster created by cairn requires TLS from its first start, and no
// step goes back: the spec has no way to ask for less.
func pgTLS(r *Result, c *spec.PostgresCluster, obs *live.Cluster) {
	cur, ok := contract.TLSMode(obs.TLS)
	if !ok {
		r.refuse(RulePostgresUnknownTLS, "", "the rendered config sets TLS mode %q, which cairn does not know (it knows %s); fix the cluster's %s ConfigMap first",
			obs.TLS, strings.Join(contract.TLSModes, ", "), contract.ConfigMap(obs.Name))
		return
	}
	params := paramsAfter(r, obs)
	if cur == contract.TLSOff {
		rev := contract.ConfigRevisionWithTLS(params, contract.TLSAccept)
		r.add(plan.Step{
			ID:   "tls-accept",
			Kind: plan.PostgresConfigureTLS,
			Summary: "Serve TLS on every member with the certificates the runtime keeps, the superuser over TLS only by its client certificate; " +
				"plain connections are still admitted (a reload, no restart)",
			Reversible: true,
			Rollback:   "Revert this pull request: the servers stop offering TLS at the next reload; clients that moved to TLS fall back to plain connections if they allow it.",
			Gates:      []plan.Gate{healthyBefore(), tlsConfigApplied(rev), tlsServed(plan.After), healthyAfter()},
			Params:     plan.Params{PostgresConfigureTLS: &plan.PostgresConfigureTLSParams{From: cur, To: contract.TLSAccept, Revision: rev, Issuer: c.Spec.Issuer()}},
		})
		cur = contract.TLSAccept
	}
	if cur == contract.TLSRequire {
		return
	}
	rev := contract.ConfigRevisionWithTLS(params, contract.TLSRequire)
	r.add(plan.Step{
		ID:   "tls-require",
		Kind: plan.PostgresConfigureTLS,
		Summary: "Require TLS: pg_hba admits only TLS connections from the network (hostssl), and cairn verifies every member's certificate (sslmode=verify-full); " +
			"clients that connect without TLS are refused from now on (a reload, no restart)",
		// Clients still connecting in plain text fail from here: the
		// maintenance window holds it, and it says so.
		Disruptive: true,
		Reversible: true,
		Rollback:   "Revert this pull request: plain connections are admitted again at the next reload.",
		Gates:      []plan.Gate{healthyBefore(), tlsServed(plan.Before), tlsConfigApplied(rev), healthyAfter()},
		Params:     plan.Params{PostgresConfigureTLS: &plan.PostgresConfigureTLSParams{From: cur, To: contract.TLSRequire, Revision: rev}},
	})
}

// tlsServed: every member serves TLS with the cluster's certificate.
func tlsServed(when plan.Phase) plan.Gate {
	return gate(plan.GateTLSServed, when, "every member serves TLS with the cluster's server certificate, verified by the runtime")
}

// tlsConfigApplied: every member has loaded the TLS step's config.
func tlsConfigApplied(rev string) plan.Gate {
	return plan.Gate{Kind: plan.GateConfigApplied, When: plan.After, Revision: rev, Description: "every member has loaded config revision " + rev}
}

// paramsAfter are the PostgreSQL parameters rendered once the steps
// planned so far are merged: those of the last step that changes them,
// or the running ones.
func paramsAfter(r *Result, obs *live.Cluster) map[string]string {
	params := obs.Parameters
	for _, s := range r.Steps {
		switch p := s.Params; {
		case p.PostgresReloadParameters != nil:
			params = p.PostgresReloadParameters.To
		case p.Template() != nil && p.Template().Parameters != nil:
			params = p.Template().Parameters.To
		}
	}
	return params
}
