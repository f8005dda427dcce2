package policies

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

const policyHead = "apiVersion: cairn.dev/v1alpha1\nkind: Policy\nmetadata: {name: prod}\nspec:\n"

func cluster(t *testing.T, labels string) spec.Cluster {
	t.Helper()
	cs, err := spec.Decode("c.yaml", []byte("apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: pg, labels: {"+labels+"}}\nspec: {version: \"15.4\", instances: 3, storage: 10Gi}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

func TestLoadErrorsSayWhereAndWhat(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct{ name, doc, want string }{
		{"unknown field", policyHead + "  windows: {}\n", `p.yaml:5:3: spec.windows: unknown field "windows"`},
		{"type error", policyHead + "  rules:\n  - name: r\n    expression: 'now + 1'\n", `p.yaml:7:17: spec.rules[0].expression: does not compile`},
		{"wrong result", policyHead + "  rules:\n  - name: r\n    expression: '\"allow\"'\n", `must return {"verdict": ..., "message": ...}, returns string`},
		{"runaway cost", policyHead + "  rules:\n  - name: r\n    expression: 'cluster.labels.all(a, cluster.labels.all(b, cluster.labels.all(c, cluster.labels.all(d, true)))) ? {\"verdict\": \"allow\"} : {\"verdict\": \"hold\"}'\n", "may cost up to"},
		{"unknown step kind", policyHead + "  backupFreshness: {maxAge: 6h, kinds: [Upgrade]}\n", `spec.backupFreshness.kinds[0]: unknown step kind "Upgrade"`},
		{"bad time zone", policyHead + "  maintenanceWindow: {schedule: '0 22 * * *', duration: 2h, timeZone: Mars/Olympus}\n", `spec.maintenanceWindow.timeZone: "Mars/Olympus" is not an IANA time zone`},
		{"bad cron", policyHead + "  maintenanceWindow: {schedule: 'sometimes', duration: 2h}\n", `spec.maintenanceWindow.schedule: invalid cron expression`},
		{"wrong kind", "apiVersion: cairn.dev/v1alpha1\nkind: Other\nmetadata: {name: x}\nspec: {}\n", `apiVersion and kind must be`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p.yaml", []byte(tc.doc), now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestRulesDecide(t *testing.T) {
	friday := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	doc := policyHead + `  selector: {environment: production}
  rules:
  - name: no-friday
    expression: 'step.disruptive && now.getDayOfWeek() == 5 ? {"verdict": "hold", "message": "not on Fridays"} : {"verdict": "allow", "message": ""}'
  - name: no-irreversible-on-small
    expression: '!step.reversible && observed.members < 3 ? {"verdict": "deny", "message": "irreversible steps need 3 members"} : {"verdict": "allow"}'
`
	set, err := Load("p.yaml", []byte(doc), friday)
	if err != nil {
		t.Fatal(err)
	}
	prod := cluster(t, "environment: production")
	obs := &live.Cluster{Members: []live.Member{{Name: "pg-0", Ready: true}}}
	ds := set.Evaluate(Input{Cluster: prod, Observed: obs, Step: plan.Step{ID: "pg-major-upgrade-16.2", Disruptive: true, Reversible: false}})
	got := map[string]plan.Verdict{}
	for _, d := range ds {
		got[d.Policy] = d.Verdict
	}
	if got["prod/no-friday"] != plan.Hold || got["prod/no-irreversible-on-small"] != plan.Deny {
		t.Fatalf("decisions %+v", ds)
	}
	if ds := set.Evaluate(Input{Cluster: cluster(t, "environment: staging"), Step: plan.Step{Disruptive: true}}); len(ds) != 0 {
		t.Errorf("the selector picks production only: %+v", ds)
	}
}

func TestBackupFreshness(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	set, err := Load("p.yaml", []byte(policyHead+"  backupFreshness: {maxAge: 6h}\n"), now)
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, "a: b")
	major := plan.Step{Kind: plan.PostgresMajorUpgrade}
	backed := func(at time.Time) *live.Cluster {
		return &live.Cluster{Backup: &live.Backup{LastSuccessful: live.Timestamp(at.Format(time.RFC3339))}}
	}
	for _, tc := range []struct {
		obs  *live.Cluster
		want plan.Verdict
	}{{nil, plan.Hold}, {backed(now.Add(-7 * time.Hour)), plan.Hold}, {backed(now.Add(-time.Hour)), plan.Allow}} {
		if ds := set.Evaluate(Input{Cluster: c, Observed: tc.obs, Step: major}); len(ds) != 1 || ds[0].Verdict != tc.want {
			t.Errorf("%+v: %+v, want %s", tc.obs, ds, tc.want)
		}
	}
	if ds := set.Evaluate(Input{Cluster: c, Step: plan.Step{Kind: plan.PostgresAddReplica}}); len(ds) != 0 {
		t.Errorf("other kinds are not held: %+v", ds)
	}
}

// A freshness decision reads the same while its verdict stays, however
// the clock moves and however many backups are taken meanwhile: the plan
// holds it, and the plan is rendered into the step's branch.
func TestBackupFreshnessReasonsDoNotMoveWithTheClock(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := cluster(t, "a: b")
	major := plan.Step{Kind: plan.PostgresMajorUpgrade}
	backed := func(at time.Time) *live.Cluster {
		return &live.Cluster{Backup: &live.Backup{LastSuccessful: live.Timestamp(at.Format(time.RFC3339))}}
	}
	tests := []struct {
		name     string
		backups  []time.Duration // backup times, before start
		later    time.Duration   // the clock at the second look, after start
		same     bool            // the verdict stays
		verdicts [2]plan.Verdict
	}{
		{"fresh, a minute later", []time.Duration{-time.Hour, -time.Hour}, time.Minute, true, [2]plan.Verdict{plan.Allow, plan.Allow}},
		{"fresh, five hours later", []time.Duration{-time.Minute, -time.Minute}, 5 * time.Hour, true, [2]plan.Verdict{plan.Allow, plan.Allow}},
		{"fresh, a new backup meanwhile", []time.Duration{-2 * time.Hour, 30 * time.Minute}, time.Hour, true, [2]plan.Verdict{plan.Allow, plan.Allow}},
		{"stale, an hour later", []time.Duration{-7 * time.Hour, -7 * time.Hour}, time.Hour, true, [2]plan.Verdict{plan.Hold, plan.Hold}},
		{"stale, a day later", []time.Duration{-6*time.Hour - time.Second, -6*time.Hour - time.Second}, 24 * time.Hour, true, [2]plan.Verdict{plan.Hold, plan.Hold}},
		{"ages past the limit: a change of meaning", []time.Duration{-5 * time.Hour, -5 * time.Hour}, 2 * time.Hour, false, [2]plan.Verdict{plan.Allow, plan.Hold}},
		{"a new backup lifts the hold", []time.Duration{-8 * time.Hour, 10 * time.Minute}, time.Hour, false, [2]plan.Verdict{plan.Hold, plan.Allow}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]plan.Decision
			for i, now := range []time.Time{start, start.Add(tc.later)} {
				set, err := Load("p.yaml", []byte(policyHead+"  backupFreshness: {maxAge: 6h}\n"), now)
				if err != nil {
					t.Fatal(err)
				}
				ds := set.Evaluate(Input{Cluster: c, Observed: backed(start.Add(tc.backups[i])), Step: major})
				if len(ds) != 1 {
					t.Fatalf("decisions %+v", ds)
				}
				got[i] = ds[0]
			}
			if got[0].Verdict != tc.verdicts[0] || got[1].Verdict != tc.verdicts[1] {
				t.Fatalf("verdicts %s, %s; want %v", got[0].Verdict, got[1].Verdict, tc.verdicts)
			}
			if (got[0].Reason == got[1].Reason) != tc.same {
				t.Errorf("reasons %q and %q; the same: want %v", got[0].Reason, got[1].Reason, tc.same)
			}
			for _, d := range got {
				if regexp.MustCompile(`\bold\b|\bago\b`).MatchString(d.Reason) {
					t.Errorf("reason %q says an age", d.Reason)
				}
			}
		})
	}
}
