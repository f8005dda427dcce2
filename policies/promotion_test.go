package policies

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// pgAt is a PostgresCluster spec at version with an environment label.
func pgAt(t *testing.T, name, env, version string) spec.Cluster {
	t.Helper()
	cs, err := spec.Decode("c.yaml", []byte(fmt.Sprintf("apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: %s, labels: {environment: %s}}\nspec: {version: %q, instances: 2, storage: 10Gi}\n", name, env, version)))
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

// running is an observed two-member cluster at version, its members ready
// since the given times ("" for not ready).
func running(name, version string, readySince ...string) *live.Cluster {
	c := &live.Cluster{Kind: spec.PostgresKind, Name: name}
	for i, since := range readySince {
		c.Members = append(c.Members, live.Member{Name: fmt.Sprintf("%s-%d", name, i), Version: version, Ready: since != "", ReadySince: live.Timestamp(since)})
	}
	return c
}

func TestPromotion(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	upgrade := &plan.Step{Kind: plan.UpgradeMember}
	major := &plan.Step{Kind: plan.PostgresMajorUpgrade}
	scale := &plan.Step{Kind: plan.PostgresAddReplica}
	prod := func(t *testing.T, next *plan.Step) FleetEntry {
		return FleetEntry{Cluster: pgAt(t, "prod", "production", "15.8"), Observed: running("prod", "14.13", "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z"), Status: plan.StatusPlanned, Next: next}
	}
	staging := func(t *testing.T, obs *live.Cluster) FleetEntry {
		return FleetEntry{Cluster: pgAt(t, obs.Name, "staging", "15.8"), Observed: obs, Status: plan.StatusConverged}
	}
	tests := []struct {
		name    string
		entries func(t *testing.T) []FleetEntry
		want    plan.Verdict
		reason  string
	}{
		{"staging soaked", func(t *testing.T) []FleetEntry {
			return []FleetEntry{prod(t, upgrade), staging(t, running("stage", "15.8", "2026-11-28T09:00:00Z", "2026-11-29T09:00:00Z"))}
		}, plan.Allow, "stage has run 15.8 healthy since 2026-11-29T09:00:00Z"},
		{"staging still soaking", func(t *testing.T) []FleetEntry {
			return []FleetEntry{prod(t, major), staging(t, running("stage", "15.8", "2026-11-28T09:00:00Z", "2026-11-30T09:00:00Z"))}
		}, plan.Hold, "the soak ends at 2026-12-01T09:00:00Z"},
		{"a member not ready", func(t *testing.T) []FleetEntry {
			return []FleetEntry{prod(t, upgrade), staging(t, running("stage", "15.8", "2026-11-28T09:00:00Z", ""))}
		}, plan.Hold, "no PostgresCluster matching {environment=staging} runs 15.8 healthy yet"},
		{"staging on another version", func(t *testing.T) []FleetEntry {
			return []FleetEntry{prod(t, upgrade), staging(t, running("stage", "15.7", "2026-11-01T09:00:00Z", "2026-11-01T09:00:00Z"))}
		}, plan.Hold, "runs 15.8 healthy yet"},
		{"no staging cluster", func(t *testing.T) []FleetEntry {
			return []FleetEntry{prod(t, upgrade)}
		}, plan.Hold, "runs 15.8 healthy yet"},
		{"one soaked staging cluster is enough", func(t *testing.T) []FleetEntry {
			return []FleetEntry{prod(t, upgrade),
				staging(t, running("stage-a", "15.8", "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z")),
				staging(t, running("stage-b", "15.8", "2026-11-20T11:00:00Z", "2026-11-20T11:00:00Z"))}
		}, plan.Allow, "stage-b"},
		{"an etcd cluster does not vouch for PostgreSQL", func(t *testing.T) []FleetEntry {
			obs := running("e", "15.8", "2026-11-01T09:00:00Z")
			obs.Kind = spec.EtcdKind
			cs, err := spec.Decode("e.yaml", []byte("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e, labels: {environment: staging}}\nspec: {size: 1, version: \"3.5.21\"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			return []FleetEntry{prod(t, upgrade), {Cluster: cs[0], Observed: obs}}
		}, plan.Hold, "healthy yet"},
		{"steps that keep the version are not decided", func(t *testing.T) []FleetEntry {
			return []FleetEntry{prod(t, scale)}
		}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := Set{Promotion{PolicyName: "prod/promotion", Selector: Selector{"environment": "production"}, After: Selector{"environment": "staging"}, Soak: 24 * time.Hour, Now: now}}
			got := set.EvaluateFleet(tc.entries(t))
			var d plan.Decision
			if len(got[0]) > 0 {
				d = got[0][0]
			}
			if d.Verdict != tc.want || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("decision %+v, want %q with %q", d, tc.want, tc.reason)
			}
			for _, other := range got[1:] {
				if len(other) > 0 {
					t.Errorf("staging clusters get no promotion decision: %+v", other)
				}
			}
		})
	}
}

func TestPromotionHeldStepGoesOnceTheSoakEnds(t *testing.T) {
	entries := []FleetEntry{
		{Cluster: pgAt(t, "prod", "production", "15.8"), Observed: running("prod", "14.13", "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z"), Next: &plan.Step{Kind: plan.UpgradeMember}},
		{Cluster: pgAt(t, "stage", "staging", "15.8"), Observed: running("stage", "15.8", "2026-11-30T00:00:00Z", "2026-11-30T00:00:00Z")},
	}
	p := Promotion{PolicyName: "p", Selector: Selector{"environment": "production"}, After: Selector{"environment": "staging"}, Soak: 24 * time.Hour}
	for _, tc := range []struct {
		now  string
		want plan.Verdict
	}{{"2026-11-30T23:59:59Z", plan.Hold}, {"2026-12-01T00:00:00Z", plan.Allow}} {
		p.Now, _ = time.Parse(time.RFC3339, tc.now)
		if got := p.EvaluateFleet(entries)[0]; got.Verdict != tc.want {
			t.Errorf("at %s: %+v, want %s", tc.now, got, tc.want)
		}
	}
}

func TestLoadPromotion(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	set, err := Load("p.yaml", []byte(policyHead+"  selector: {environment: production}\n  promotion: {after: {environment: staging}, soak: 2d}\n"), now)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := set[0].(Promotion); len(set) != 1 || !ok || p.Soak != 48*time.Hour || p.After["environment"] != "staging" || p.PolicyName != "prod/promotion" {
		t.Fatalf("set = %#v", set)
	}
	for _, tc := range []struct{ doc, want string }{
		{"  promotion: {soak: 24h}\n", "p.yaml:5:14: spec.promotion.after: needs the labels"},
		{"  promotion: {after: {environment: staging}, soak: soon}\n", "spec.promotion.soak"},
	} {
		if _, err := Load("p.yaml", []byte(policyHead+tc.doc), now); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func TestAStepPromotionHoldsTakesNoConcurrencyPlace(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	upgrade := &plan.Step{Kind: plan.UpgradeMember, Disruptive: true}
	// "a" wants 15.8, which no staging cluster ran; "b" wants 15.7, which
	// one did. Concurrency comes first in the file but is decided last.
	entries := []FleetEntry{
		{Cluster: pgAt(t, "a", "production", "15.8"), Observed: running("a", "15.6", "2026-11-01T00:00:00Z"), Status: plan.StatusPlanned, Next: upgrade},
		{Cluster: pgAt(t, "b", "production", "15.7"), Observed: running("b", "15.6", "2026-11-01T00:00:00Z"), Status: plan.StatusPlanned, Next: upgrade},
		{Cluster: pgAt(t, "stage", "staging", "15.7"), Observed: running("stage", "15.7", "2026-11-01T00:00:00Z"), Status: plan.StatusConverged},
	}
	prod := Selector{"environment": "production"}
	set := Set{
		Concurrency{PolicyName: "a-concurrency", Max: 1, Selector: prod},
		Promotion{PolicyName: "b-promotion", Selector: prod, After: Selector{"environment": "staging"}, Soak: time.Hour, Now: now},
	}
	got := set.EvaluateFleet(entries)
	verdicts := func(ds []plan.Decision) string {
		var v []string
		for _, d := range ds {
			v = append(v, d.Policy+"="+string(d.Verdict))
		}
		return strings.Join(v, " ")
	}
	if v := verdicts(got[0]); v != "b-promotion=Hold" {
		t.Errorf("a: %s, want only the promotion hold", v)
	}
	if v := verdicts(got[1]); v != "a-concurrency=Allow b-promotion=Allow" {
		t.Errorf("b: %s, want the concurrency place and the promotion", v)
	}
}
