package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// decodeOne decodes a spec written in YAML, as a person would write it.
func decodeOne(t testing.TB, doc string) spec.Cluster {
	t.Helper()
	cs, err := spec.Decode("test.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("decode spec: %v", err)
	}
	if len(cs) != 1 {
		t.Fatalf("decode spec: got %d clusters", len(cs))
	}
	return cs[0]
}

// etcdSpec returns an EtcdCluster "e" with extra YAML lines under spec.
func etcdSpec(t testing.TB, size int, version string, extra ...string) spec.Cluster {
	return decodeOne(t, fmt.Sprintf(`apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: e}
spec:
  size: %d
  version: %q
%s`, size, version, indent(extra)))
}

// pgSpec returns a PostgresCluster "pg" with extra YAML lines under spec.
func pgSpec(t testing.TB, instances int, version string, extra ...string) spec.Cluster {
	doc := fmt.Sprintf(`apiVersion: db.example.com/v1alpha1
kind: PostgresCluster
metadata: {name: pg}
spec:
  version: %q
  instances: %d
%s`, version, instances, indent(extra))
	if !strings.Contains(doc, "storage:") {
		doc += "  storage: 10Gi\n"
	}
	return decodeOne(t, doc)
}

func indent(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// etcdLive is a settled etcd cluster "e" of n members at version, led by
// ordinal leader.
func etcdLive(n int, version string, leader int) *live.Cluster {
	// A cluster cairn created: it requires TLS and its NetworkPolicy is
	// rendered (etcdtls_test.go and network_test.go plan the way there
	// for one rendered before them).
	c := &live.Cluster{Kind: spec.EtcdKind, Name: "e", Storage: "8Gi", Network: contract.NetworkRestricted, TLS: contract.TLSRequire, Runtime: live.Runtime{ReadOnlyRoot: true},
		StatefulSet: live.StatefulSet{Replicas: n, Version: version, ReadOnlyRoot: true},
		// The default compaction, as a cluster created with it runs it.
		Compaction: &live.Compaction{Mode: spec.DefaultEtcdCompactionMode, Retention: spec.DefaultEtcdCompactionRetention, Applied: true}}
	for i := range n {
		role := live.RoleFollower
		if i == leader {
			role = live.RoleLeader
		}
		c.Members = append(c.Members, live.Member{Name: fmt.Sprintf("e-%d", i), Version: version, Ready: true, Role: role, TLS: true, PeerTLS: true})
	}
	return c
}

// pgLive is a settled PostgreSQL cluster "pg" of n members at version with
// the primary at ordinal primary.
func pgLive(n int, version string, primary int) *live.Cluster {
	// A cluster cairn created: it requires TLS and its NetworkPolicy is
	// rendered (pgtls_test.go and network_test.go plan the way there for
	// one rendered before them).
	c := &live.Cluster{Kind: spec.PostgresKind, Name: "pg", Storage: "10Gi", TLS: contract.TLSRequire, Network: contract.NetworkRestricted,
		Runtime: live.Runtime{ReadOnlyRoot: true}, StatefulSet: live.StatefulSet{Replicas: n, Version: version, ReadOnlyRoot: true}}
	for i := range n {
		role := live.RoleReplica
		if i == primary {
			role = live.RolePrimary
		}
		c.Members = append(c.Members, live.Member{Name: fmt.Sprintf("pg-%d", i), Version: version, Ready: true, Role: role, TLS: true})
	}
	return c
}

func with(c *live.Cluster, edit func(c *live.Cluster)) *live.Cluster {
	edit(c)
	return c
}

func stepIDs(p plan.Plan) []string {
	ids := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		ids[i] = s.ID
	}
	return ids
}

func refusalRules(p plan.Plan) []string {
	var rules []string
	for _, r := range p.Refusals {
		rules = append(rules, r.Rule)
	}
	return rules
}

func step(t *testing.T, p plan.Plan, id string) plan.Step {
	t.Helper()
	for _, s := range p.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no step %s in %v", id, stepIDs(p))
	return plan.Step{}
}

// heldForWindow reports whether s waits for the maintenance window: a
// TakeBackup step until a backup started now ends inside it, any other
// step until it is open.
func heldForWindow(s plan.Step) bool {
	if s.Kind == plan.TakeBackup {
		return hasGate(s, plan.GateBackupEndsInWindow, plan.Before) && !hasGate(s, plan.GateMaintenanceWindow, plan.Before)
	}
	return hasGate(s, plan.GateMaintenanceWindow, plan.Before)
}

func hasGate(s plan.Step, kind plan.GateKind, when plan.Phase) bool {
	for _, g := range s.Gates {
		if g.Kind == kind && g.When == when {
			return true
		}
	}
	return false
}

// kinds is the planner of both kinds, as cmd/cairn wires it.
var kinds = New(Etcd(), Postgres())

// hasMemberGate reports whether s has a gate of kind on member.
func hasMemberGate(s plan.Step, kind plan.GateKind, member string) bool {
	for _, g := range s.Gates {
		if g.Kind == kind && g.Member == member {
			return true
		}
	}
	return false
}
