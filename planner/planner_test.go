package planner

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
)

func snapshot(cs ...*live.Cluster) *live.Snapshot {
	s := &live.Snapshot{APIVersion: live.APIVersion, Kind: live.Kind}
	for _, c := range cs {
		s.Clusters = append(s.Clusters, *c)
	}
	return s
}

func TestPlanIsDeterministic(t *testing.T) {
	desired := []spec.Cluster{etcdSpec(t, 5, "3.5.21"), pgSpec(t, 3, "14.9")}
	observed := snapshot(pgLive(3, "14.5", 1), etcdLive(3, "3.4.37", 2))
	first, err := kinds.Plan(desired, observed, nil).EncodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		slices.Reverse(desired)
		slices.Reverse(observed.Clusters)
		again, _ := kinds.Plan(desired, observed, nil).EncodeJSON()
		if !bytes.Equal(first, again) {
			t.Fatalf("plans differ between runs:\n%s\n%s", first, again)
		}
	}
}

func TestPlanOrdersByNameAndRefusesToDeleteOrphans(t *testing.T) {
	gone := pgLive(2, "14.5", 0)
	gone.Name = "aaa-gone"
	gone.Members[0].Name, gone.Members[1].Name = "aaa-gone-0", "aaa-gone-1"
	l := kinds.Plan([]spec.Cluster{pgSpec(t, 3, "14.5"), etcdSpec(t, 3, "3.5.21")}, snapshot(gone), nil)
	var names []string
	for _, p := range l.Plans {
		names = append(names, p.Cluster.Name)
	}
	if !slices.Equal(names, []string{"aaa-gone", "e", "pg"}) {
		t.Fatalf("plans for %v", names)
	}
	if p := l.Plans[0]; p.Status != plan.StatusRefused || p.Refusals[0].Rule != RuleSpecRemoved || len(p.Steps) != 0 {
		t.Errorf("orphan plan: %+v", p)
	}
}

func TestFingerprintsAndIDs(t *testing.T) {
	a := kinds.PlanCluster(etcdSpec(t, 5, "3.5.21"), etcdLive(3, "3.5.21", 0), nil)
	b := kinds.PlanCluster(etcdSpec(t, 5, "3.5.21"), etcdLive(3, "3.5.21", 1), nil)
	if a.SpecFingerprint != b.SpecFingerprint || a.ObservedFingerprint == b.ObservedFingerprint {
		t.Error("the observed fingerprint follows the observed state, the spec fingerprint the spec")
	}
	if a.ID != b.ID {
		t.Error("the same change planned against a different leader keeps its plan ID")
	}
	c := kinds.PlanCluster(etcdSpec(t, 7, "3.5.21"), etcdLive(3, "3.5.21", 0), nil)
	if c.ID == a.ID || c.SpecFingerprint == a.SpecFingerprint {
		t.Error("a different spec gives a different plan")
	}
	if !strings.HasPrefix(a.SpecFingerprint, "sha256:") || len(a.ID) != 12 {
		t.Errorf("fingerprint %q id %q", a.SpecFingerprint, a.ID)
	}
}

// holdDisruptive holds every disruptive step, as a maintenance-window
// policy outside its window would.
type holdDisruptive struct{}

func (holdDisruptive) Name() string { return "hold-disruptive" }
func (holdDisruptive) Evaluate(in policies.Input) plan.Decision {
	if in.Step.Disruptive {
		return plan.Decision{Verdict: plan.Hold, Reason: "outside the window"}
	}
	return plan.Decision{}
}

type denyAll struct{}

func (denyAll) Name() string { return "deny-all" }
func (denyAll) Evaluate(policies.Input) plan.Decision {
	return plan.Decision{Verdict: plan.Deny, Reason: "frozen"}
}

func TestPoliciesDecideOnEachStep(t *testing.T) {
	p := kinds.PlanCluster(pgSpec(t, 3, "14.9"), pgLive(3, "14.5", 0), policies.Set{denyAll{}, holdDisruptive{}})
	for _, s := range p.Steps {
		want := []string{"deny-all"}
		if s.Disruptive {
			want = append(want, "hold-disruptive")
		}
		var got []string
		for _, d := range s.Decisions {
			got = append(got, d.Policy)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: decisions %v, want %v", s.ID, got, want)
		}
	}
	if p.Status != plan.StatusPlanned || len(p.Steps) != 4 {
		t.Errorf("policies decide on steps; they do not remove them: %s %v", p.Status, stepIDs(p))
	}
}

func TestJSONShape(t *testing.T) {
	l := kinds.Plan([]spec.Cluster{etcdSpec(t, 3, "3.5.21")}, snapshot(etcdLive(3, "3.5.21", 0)), nil)
	data, err := l.EncodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"plans": [`, `"steps": []`, `"refusals": []`, `"status": "Converged"`, `"apiVersion": "etcd.database.coreos.com/v1beta2"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("JSON lacks %s:\n%s", want, data)
		}
	}
}

func TestFleetPoliciesDecideOnEachClustersNextStep(t *testing.T) {
	other := decodeOne(t, "apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: orders}\nspec: {version: \"14.9\", instances: 3, storage: 10Gi}\n")
	desired := []spec.Cluster{pgSpec(t, 3, "14.9"), other}
	// Both clusters have upgraded their replicas; the switchover that
	// comes next is disruptive.
	replicasUpgraded := func(name string) *live.Cluster {
		return with(pgLive(3, "14.5", 0), func(c *live.Cluster) {
			c.Name = name
			c.StatefulSet = live.StatefulSet{Replicas: 3, Version: "14.9", UpdatePartition: 1}
			for i := range c.Members {
				c.Members[i].Name = fmt.Sprintf("%s-%d", name, i)
				if i > 0 {
					c.Members[i].Version = "14.9"
				}
			}
		})
	}
	observed := snapshot(replicasUpgraded("pg"), replicasUpgraded("orders"))
	l := kinds.Plan(desired, observed, policies.Set{policies.Concurrency{PolicyName: "one-at-a-time", Max: 1}})
	verdicts := map[string]plan.Verdict{}
	for _, p := range l.Plans {
		if len(p.Steps) == 0 || !p.Steps[0].Disruptive {
			t.Fatalf("%s: want a disruptive first step, got %v", p.Cluster.Name, stepIDs(p))
		}
		for i, s := range p.Steps {
			if i > 0 && len(s.Decisions) > 0 {
				t.Errorf("%s: only the next step gets a fleet decision, %s has %v", p.Cluster.Name, s.ID, s.Decisions)
			}
		}
		if len(p.Steps[0].Decisions) != 1 {
			t.Fatalf("%s: decisions %v", p.Cluster.Name, p.Steps[0].Decisions)
		}
		verdicts[p.Cluster.Name] = p.Steps[0].Decisions[0].Verdict
	}
	if verdicts["orders"] != plan.Allow || verdicts["pg"] != plan.Hold {
		t.Fatalf("verdicts %v: want the first cluster by name to go, the other held", verdicts)
	}
}

// observedNames is a fleet policy that answers with what it was shown of
// each cluster's observed state.
type observedNames struct{}

func (observedNames) Name() string                          { return "observed" }
func (observedNames) Evaluate(policies.Input) plan.Decision { return plan.Decision{} }
func (observedNames) EvaluateFleet(entries []policies.FleetEntry) []plan.Decision {
	out := make([]plan.Decision, len(entries))
	for i, e := range entries {
		reason := "nothing observed"
		if e.Observed != nil {
			reason = "observed " + e.Observed.Name
		}
		out[i] = plan.Decision{Verdict: plan.Allow, Reason: reason}
	}
	return out
}

func TestFleetPoliciesSeeEachClustersObservedState(t *testing.T) {
	desired := []spec.Cluster{pgSpec(t, 3, "14.9"), etcdSpec(t, 3, "3.5.21")}
	l := kinds.Plan(desired, snapshot(pgLive(3, "14.5", 0)), policies.Set{observedNames{}})
	want := map[string]string{"pg": "observed pg", "e": "nothing observed"}
	for _, p := range l.Plans {
		if got := p.Steps[0].Decisions[0].Reason; got != want[p.Cluster.Name] {
			t.Errorf("%s: %q, want %q", p.Cluster.Name, got, want[p.Cluster.Name])
		}
	}
}

// A spec with restoreFrom creates the cluster from the named backup,
// and only the create step carries it.
func TestCreateFromBackup(t *testing.T) {
	// A bucket the cluster does not back up to needs the spec's opt-in,
	// which the step says.
	c := etcdSpec(t, 3, "3.7.3", "restoreFrom:", `  storageLocation: "s3://backups/etcd"`, "  cluster: old", "  backup: 20261130T020000Z-1a2b3c", "  trustForeignBucket: true")
	pl := kinds.Plan([]spec.Cluster{c}, nil, nil).Plans[0]
	r := pl.Steps[0].Params.CreateCluster.RestoreFrom
	if r == nil || *r != (plan.RestoreSource{StorageLocation: "s3://backups/etcd", Cluster: "old", Backup: "20261130T020000Z-1a2b3c", ForeignBucket: true}) ||
		!strings.Contains(pl.Steps[0].Summary, "restored from backup 20261130T020000Z-1a2b3c of old at s3://backups/etcd; that bucket is not the cluster's own, trusted by spec.restoreFrom.trustForeignBucket") {
		t.Fatalf("create step: %+v %q", r, pl.Steps[0].Summary)
	}
	// From the cluster's own bucket: no opt-in, nothing to say.
	c = etcdSpec(t, 3, "3.7.3", "backup:", `  schedule: "@daily"`, `  storageLocation: "s3://backups/new"`,
		"restoreFrom:", `  storageLocation: "s3://backups/etcd"`, "  cluster: old", "  backup: 20261130T020000Z-1a2b3c")
	pl = kinds.Plan([]spec.Cluster{c}, nil, nil).Plans[0]
	if r := pl.Steps[0].Params.CreateCluster.RestoreFrom; r == nil || r.ForeignBucket || strings.Contains(pl.Steps[0].Summary, "not the cluster's own") {
		t.Fatalf("create step from the cluster's own bucket: %+v %q", r, pl.Steps[0].Summary)
	}
	c = pgSpec(t, 3, "15.4", "restoreFrom:", `  storageLocation: "file:///b"`, "  trustForeignBucket: true")
	pl = kinds.Plan([]spec.Cluster{c}, nil, nil).Plans[0]
	if r := pl.Steps[0].Params.CreateCluster.RestoreFrom; r == nil || r.Cluster != "pg" || r.Backup != "latest" {
		t.Fatalf("create step: %+v", r)
	}
	for _, s := range pl.Steps[1:] {
		if s.Params.CreateCluster != nil {
			t.Fatalf("step %s carries create parameters", s.ID)
		}
	}
	// To a point in time: PostgreSQL only, an RFC 3339 time or latest.
	c = pgSpec(t, 3, "15.4", "restoreFrom:", `  storageLocation: "file:///b"`, `  targetTime: "2026-11-30T14:05:00Z"`, "  trustForeignBucket: true")
	pl = kinds.Plan([]spec.Cluster{c}, nil, nil).Plans[0]
	if r := pl.Steps[0].Params.CreateCluster.RestoreFrom; r == nil || r.TargetTime != "2026-11-30T14:05:00Z" || !strings.Contains(pl.Steps[0].Summary, "replaying its archived WAL to 2026-11-30T14:05:00Z") {
		t.Fatalf("create step to a target time: %+v %q", r, pl.Steps[0].Summary)
	}
	for _, bad := range []struct{ doc, want string }{
		{"apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: pg}\nspec: {version: '15.4', instances: 1, storage: 1Gi, restoreFrom: {storageLocation: 'file:///b', targetTime: yesterday}}\n", "spec.restoreFrom.targetTime"},
		{"apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {version: '3.7.3', size: 1, restoreFrom: {storageLocation: 'file:///b', backup: 20261130T020000Z-1a2b3c, targetTime: latest}}\n", "etcd has no log archive"},
	} {
		_, err := spec.Decode("bad.yaml", []byte(bad.doc))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v", bad.want, err)
		}
	}
}

// The rendered Roles name members 0..contract.MaxMembers-1: no kind may
// plan more.
func TestSizeLimitsWithinTheContract(t *testing.T) {
	if MaxEtcdSize > contract.MaxMembers || MaxPostgresInstances > contract.MaxMembers {
		t.Errorf("size limits %d, %d exceed contract.MaxMembers %d", MaxEtcdSize, MaxPostgresInstances, contract.MaxMembers)
	}
}
