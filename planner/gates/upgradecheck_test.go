package gates

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// The major upgrade's gate on its pre-flight check: only a passed Job for
// the major the cluster runs and the target's passes; a refusal says
// pg_upgrade's reason.
func TestUpgradeCheckedGate(t *testing.T) {
	g := plan.Gate{Kind: plan.GateUpgradeChecked, When: plan.Before, Version: "15.4", Description: "the check passed"}
	obs := func(u *live.UpgradeCheck) *live.Cluster {
		return &live.Cluster{Kind: "PostgresCluster", Name: "db", StatefulSet: live.StatefulSet{Replicas: 1, Version: "13.23"}, UpgradeCheck: u}
	}
	tests := []struct {
		name   string
		check  *live.UpgradeCheck
		pass   bool
		reason string
	}{
		{"passed", &live.UpgradeCheck{From: 13, To: 15, Result: live.UpgradeCheckPassed}, true, ""},
		{"no Job", nil, false, "no pre-flight check of the upgrade from 13 to 15 has run"},
		{"still running", &live.UpgradeCheck{From: 13, To: 15}, false, "still running"},
		{"refused", &live.UpgradeCheck{From: 13, To: 15, Result: live.UpgradeCheckFailed, Reason: "Checking for reg* data types in user tables fatal"},
			false, "the check failed; fix what it names, take a new backup, and delete the failed Job so it runs again: Checking for reg* data types"},
		{"another target", &live.UpgradeCheck{From: 13, To: 14, Result: live.UpgradeCheckPassed}, false, "checks the upgrade from 13 to 14, not from 13 to 15"},
		{"another source", &live.UpgradeCheck{From: 12, To: 15, Result: live.UpgradeCheckPassed}, false, "not from 13 to 15"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(g, nil, obs(tc.check), time.Now())
			if r.Pass != tc.pass || !strings.Contains(r.Reason, tc.reason) {
				t.Fatalf("pass %v (%q), want %v (%q)", r.Pass, r.Reason, tc.pass, tc.reason)
			}
		})
	}
	removed := plan.Gate{Kind: plan.GateUpgradeCheckRemoved, When: plan.After}
	if r := Evaluate(removed, nil, obs(nil), time.Now()); !r.Pass {
		t.Errorf("no Job: the removal gate does not pass: %s", r.Reason)
	}
	if r := Evaluate(removed, nil, obs(&live.UpgradeCheck{From: 13, To: 15}), time.Now()); r.Pass {
		t.Error("the Job is there: the removal gate passes")
	}
}
