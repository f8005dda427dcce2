package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// An etcd cluster rendered before TLS moves to it in two rolling
// restarts: first every member offers TLS beside plain HTTP, then, once
// the runtime has verified every member over TLS, each member requires
// it, one disruptive, irreversible step at a time.
func TestEtcdTLSPlans(t *testing.T) {
	const v = "3.5.21"
	accept := "restart-%d-" + etcdTLSRevision(t, contract.TLSAccept)
	require := "restart-%d-" + etcdTLSRevision(t, contract.TLSRequire)
	ids := func(format string, ords ...int) []string {
		var out []string
		for _, o := range ords {
			out = append(out, strings.Replace(format, "%d", string(rune('0'+o)), 1))
		}
		return out
	}
	cases := []struct {
		name string
		edit func(c *live.Cluster)
		// want are the steps: accept restarts, then require restarts.
		wantAccept, wantRequire []string
		wantRule                string
	}{
		{name: "rendered before TLS", edit: tlsMode("", false, false),
			wantAccept: ids(accept, 2, 1, 0), wantRequire: ids(require, 2, 1, 0)},
		{name: "accepting, every member serving TLS", edit: tlsMode(contract.TLSAccept, true, false),
			wantRequire: ids(require, 2, 1, 0)},
		{name: "accept restart under way", edit: func(c *live.Cluster) {
			tlsMode("", false, false)(c)
			// The first accept step merged: the config says accept, e-2
			// restarted with it.
			c.TLS = contract.TLSAccept
			c.StatefulSet.TemplateRevision, c.StatefulSet.UpdatePartition = etcdTLSRevision(t, contract.TLSAccept), 2
			c.Members[2].TemplateRevision, c.Members[2].TLS = c.StatefulSet.TemplateRevision, true
		}, wantAccept: ids(accept, 1, 0), wantRequire: ids(require, 2, 1, 0)},
		{name: "require restart under way", edit: func(c *live.Cluster) {
			tlsMode(contract.TLSAccept, true, false)(c)
			c.TLS = contract.TLSRequire
			c.StatefulSet.TemplateRevision, c.StatefulSet.UpdatePartition = etcdTLSRevision(t, contract.TLSRequire), 2
			c.Members[2].TemplateRevision, c.Members[2].PeerTLS = c.StatefulSet.TemplateRevision, true
		}, wantRequire: ids(require, 1, 0)},
		{name: "required", edit: tlsMode(contract.TLSRequire, true, true)},
		{name: "unknown mode", edit: tlsMode("sometimes", false, false), wantRule: RuleEtcdUnknownTLS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := kinds.PlanCluster(etcdSpec(t, 3, v), with(etcdLive(3, v, 0), tc.edit), nil)
			if tc.wantRule != "" {
				if got := refusalRules(p); !slices.Contains(got, tc.wantRule) {
					t.Fatalf("refusals %v, want %s", got, tc.wantRule)
				}
				return
			}
			want := append(slices.Clone(tc.wantAccept), tc.wantRequire...)
			if got := stepIDs(p); !slices.Equal(got, want) {
				t.Fatalf("steps %v, want %v", got, want)
			}
			for i, id := range tc.wantAccept {
				s := step(t, p, id)
				// Offering TLS cuts nobody off, and reverting it is safe.
				if s.Disruptive || !s.Reversible || hasGate(s, plan.GateTLSServed, plan.Before) {
					t.Errorf("%s: disruptive %v, reversible %v, gates %+v", id, s.Disruptive, s.Reversible, s.Gates)
				}
				tmpl := s.Params.RestartMember.Template
				if first := i == 0 && tc.name != "accept restart under way"; first != (tmpl != nil && tmpl.TLS == contract.TLSAccept) {
					t.Errorf("%s: template %+v", id, tmpl)
				}
			}
			for i, id := range tc.wantRequire {
				s := step(t, p, id)
				if !s.Disruptive || s.Reversible || !strings.Contains(s.Summary, "TLS required") || !strings.Contains(s.Rollback, "Not by reverting") {
					t.Errorf("%s: disruptive %v, reversible %v, summary %q, rollback %q", id, s.Disruptive, s.Reversible, s.Summary, s.Rollback)
				}
				// The next member restarts only once the runtime moved this
				// one's peer URL to https.
				for _, g := range []plan.GateKind{plan.GateMemberRestarted, plan.GateMemberReady, plan.GateClusterHealthy, plan.GateMemberPeerTLS} {
					if !hasGate(s, g, plan.After) {
						t.Errorf("%s: no %s after-gate: %+v", id, g, s.Gates)
					}
				}
				// Requiring TLS waits until every member is seen serving it.
				if first := i == 0 && tc.name != "require restart under way"; first != hasGate(s, plan.GateTLSServed, plan.Before) {
					t.Errorf("%s: TLSServed before-gate %v: %+v", id, !first, s.Gates)
				}
			}
		})
	}
}

// A restart of a cluster that requires TLS, of members whose peers
// already reach them over TLS, is an ordinary restart; one whose member
// still has a plain peer URL completes that member's move and says so.
func TestEtcdRestartAfterTLSRequired(t *testing.T) {
	const v = "3.5.21"
	for _, peerTLS := range []bool{true, false} {
		obs := with(etcdLive(3, v, 0), func(c *live.Cluster) {
			c.Members[0].PeerTLS = peerTLS
		})
		p := kinds.PlanCluster(etcdSpec(t, 3, v, "resources: {requests: {cpu: 500m}}"), obs, nil)
		if len(p.Steps) != 3 {
			t.Fatalf("peer TLS %v: steps %v", peerTLS, stepIDs(p))
		}
		for _, s := range p.Steps {
			moves := s.Params.RestartMember.Ordinal == 0 && !peerTLS
			if s.Disruptive != moves || s.Reversible == moves || strings.Contains(s.Summary, "TLS required") != moves {
				t.Errorf("peer TLS %v: %s: disruptive %v, reversible %v, summary %q", peerTLS, s.ID, s.Disruptive, s.Reversible, s.Summary)
			}
		}
	}
}

// The plans of a cluster moving to TLS, step by step, are byte-stable.
func TestEtcdTLSPlanIsStable(t *testing.T) {
	obs := with(etcdLive(3, "3.5.21", 0), tlsMode("", false, false))
	a := kinds.PlanCluster(etcdSpec(t, 3, "3.5.21"), obs, nil)
	b := kinds.PlanCluster(etcdSpec(t, 3, "3.5.21"), obs, nil)
	ja, err := a.EncodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	jb, err := b.EncodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(ja) != string(jb) {
		t.Fatal("two plans of the same cluster differ")
	}
}

// tlsMode sets an etcd cluster's rendered TLS mode and what its members
// serve.
func tlsMode(mode string, served, peers bool) func(c *live.Cluster) {
	return func(c *live.Cluster) {
		c.StatefulSet.TemplateRevision = ""
		c.TLS = mode
		for i := range c.Members {
			c.Members[i].TLS, c.Members[i].PeerTLS = served, peers
		}
	}
}

// etcdTLSRevision is the template revision of the restart to mode of the
// 3-member test cluster at the default spec.
func etcdTLSRevision(t *testing.T, mode string) string {
	t.Helper()
	return contract.TemplateRevisionOf(contract.Resources{}, withTLS(revisionInputs(nil, nil, false), mode))
}
