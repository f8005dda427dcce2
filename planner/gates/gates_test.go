package gates

import (
	"regexp"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

func etcd(members ...live.Member) *live.Cluster {
	return &live.Cluster{Kind: spec.EtcdKind, Name: "e", Storage: "8Gi", ClusterVersion: "3.5",
		StatefulSet: live.StatefulSet{Replicas: len(members)}, Members: members}
}

func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	leader := live.Member{Name: "e-0", Version: "3.5.21", Ready: true, Role: live.RoleLeader}
	follower := live.Member{Name: "e-1", Version: "3.5.21", Ready: true, Role: live.RoleFollower}
	learner := live.Member{Name: "e-2", Version: "3.5.21", Ready: true, Role: live.RoleLearner}
	notReady := live.Member{Name: "e-1", Version: "3.5.21", Role: live.RoleFollower}
	cs, err := spec.Decode("e.yaml", []byte("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 3, version: \"3.5.21\", backup: {schedule: '0 2 * * *', storageLocation: 's3://bkp/e'}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	backedUp := func(at time.Time) *live.Cluster {
		o := etcd(leader, follower)
		o.Backup = &live.Backup{Schedule: "0 2 * * *", StorageLocation: "s3://bkp/e", LastSuccessful: live.Timestamp(at.Format(time.RFC3339))}
		return o
	}
	tests := []struct {
		name string
		gate plan.Gate
		obs  *live.Cluster
		pass bool
	}{
		{"healthy", plan.Gate{Kind: plan.GateClusterHealthy}, etcd(leader, follower), true},
		{"a learner is not healthy", plan.Gate{Kind: plan.GateClusterHealthy}, etcd(leader, follower, learner), false},
		{"no leader", plan.Gate{Kind: plan.GateClusterHealthy}, etcd(follower), false},
		{"pods missing", plan.Gate{Kind: plan.GateStatefulSetSettled}, func() *live.Cluster { o := etcd(leader); o.StatefulSet.Replicas = 2; return o }(), false},
		{"member ready", plan.Gate{Kind: plan.GateMemberReady, Member: "e-1"}, etcd(leader, follower), true},
		{"member not ready", plan.Gate{Kind: plan.GateMemberReady, Member: "e-1"}, etcd(leader, notReady), false},
		{"missing member", plan.Gate{Kind: plan.GateMemberReady, Member: "e-9"}, etcd(leader), false},
		{"version", plan.Gate{Kind: plan.GateMemberVersion, Member: "e-0", Version: "3.5.21"}, etcd(leader), true},
		{"other version", plan.Gate{Kind: plan.GateMemberVersion, Member: "e-0", Version: "3.6.16"}, etcd(leader), false},
		{"learner is no voter", plan.Gate{Kind: plan.GateMemberVoter, Member: "e-2"}, etcd(leader, follower, learner), false},
		{"removed", plan.Gate{Kind: plan.GateMemberRemoved, Member: "e-2"}, etcd(leader, follower), true},
		{"quorum still lost", plan.Gate{Kind: plan.GateQuorumLost}, func() *live.Cluster {
			o := etcd(notReady)
			o.QuorumLost = &live.QuorumLoss{Since: "2026-11-30T11:00:00Z"}
			return o
		}(), true},
		{"quorum back", plan.Gate{Kind: plan.GateQuorumLost}, etcd(leader, follower), false},
		{"recovery started", plan.Gate{Kind: plan.GateRecoveryStarted, Revision: "r1"}, func() *live.Cluster { o := etcd(leader); o.RecoverDone = "r1"; return o }(), true},
		{"an older recovery started", plan.Gate{Kind: plan.GateRecoveryStarted, Revision: "r2"}, func() *live.Cluster { o := etcd(leader); o.RecoverDone = "r1"; return o }(), false},
		{"recovery refused", plan.Gate{Kind: plan.GateRecoveryStarted, Revision: "r1"}, func() *live.Cluster { o := etcd(leader); o.RecoverRefused = "r1"; return o }(), false},
		{"still a member", plan.Gate{Kind: plan.GateMemberRemoved, Member: "e-1"}, etcd(leader, follower), false},
		{"cluster version", plan.Gate{Kind: plan.GateClusterVersion, Version: "3.5"}, etcd(leader), true},
		{"storage", plan.Gate{Kind: plan.GateStorageCapacity, Quantity: "16Gi"}, etcd(leader), false},
		{"fresh backup", plan.Gate{Kind: plan.GateBackupFresh, MaxAge: "6h"}, backedUp(now.Add(-time.Hour)), true},
		{"stale backup", plan.Gate{Kind: plan.GateBackupFresh, MaxAge: "6h"}, backedUp(now.Add(-7 * time.Hour)), false},
		{"no backup", plan.Gate{Kind: plan.GateBackupFresh, MaxAge: "6h"}, etcd(leader), false},
		{"backup configured", plan.Gate{Kind: plan.GateBackupConfigured}, backedUp(now), true},
		{"backup not configured", plan.Gate{Kind: plan.GateBackupConfigured}, etcd(leader), false},
		{"unobserved", plan.Gate{Kind: plan.GateClusterHealthy}, nil, false},
		{"unknown gate kind", plan.Gate{Kind: "Nonsense"}, etcd(leader), false},
		{"no window is always open", plan.Gate{Kind: plan.GateMaintenanceWindow}, etcd(leader), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(tc.gate, c, tc.obs, now)
			if r.Pass != tc.pass || (!r.Pass && r.Reason == "") || (r.Pass && r.Reason != "") {
				t.Fatalf("%+v, want pass=%v", r, tc.pass)
			}
		})
	}
}

// A backup gate's reason names the backup, not its age: the same failing
// gate reads the same as the clock moves (the pull request's body and
// status show it, and a new text each minute would write them again).
func TestBackupGateReasonDoesNotMoveWithTheClock(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cs, err := spec.Decode("e.yaml", []byte("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 3, version: \"3.5.21\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	leader := live.Member{Name: "e-0", Version: "3.5.21", Ready: true, Role: live.RoleLeader}
	backed := func(at time.Time) *live.Cluster {
		o := etcd(leader)
		o.Backup = &live.Backup{LastSuccessful: live.Timestamp(at.Format(time.RFC3339))}
		return o
	}
	gate := plan.Gate{Kind: plan.GateBackupFresh, MaxAge: "6h"}
	tests := []struct {
		name   string
		backup time.Duration
		later  []time.Duration
	}{
		{"stale by a minute", -6*time.Hour - time.Minute, []time.Duration{time.Minute, time.Hour, 30 * time.Hour}},
		{"stale by days", -72 * time.Hour, []time.Duration{time.Second, 59 * time.Minute}},
		{"no backup", 0, []time.Duration{time.Minute, 24 * time.Hour}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs := etcd(leader)
			if tc.backup != 0 {
				obs = backed(start.Add(tc.backup))
			}
			first := Evaluate(gate, cs[0], obs, start)
			for _, d := range tc.later {
				r := Evaluate(gate, cs[0], obs, start.Add(d))
				if r.Pass || first.Pass || r.Reason != first.Reason {
					t.Errorf("%s later: %+v; at first %+v", d, r, first)
				}
			}
			if regexp.MustCompile(`\bold\b|\bago\b`).MatchString(first.Reason) {
				t.Errorf("reason %q says an age", first.Reason)
			}
		})
	}
}

func TestBeforeChecksTheWindow(t *testing.T) {
	cs, err := spec.Decode("e.yaml", []byte("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 1, version: \"3.5.21\", maintenanceWindow: {schedule: '0 22 * * *', duration: 2h, timeZone: UTC}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	obs := etcd(live.Member{Name: "e-0", Version: "3.5.20", Ready: true, Role: live.RoleLeader})
	s := plan.Step{Gates: []plan.Gate{
		{Kind: plan.GateMaintenanceWindow, When: plan.Before, Description: "the window is open"},
		{Kind: plan.GateClusterHealthy, When: plan.Before, Description: "healthy"},
		{Kind: plan.GateMemberVersion, When: plan.After, Member: "e-0", Version: "3.5.21", Description: "e-0 runs 3.5.21"},
	}}
	noon := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Time
		pass bool
		why  string
	}{{noon, false, "the window is open: it opens at 2026-11-30 22:00 UTC"}, {noon.Add(10*time.Hour + 30*time.Minute), true, ""}} {
		results := Before(s, cs[0], obs, tc.at)
		ok, why := Pass(results)
		if len(results) != 2 || ok != tc.pass || why != tc.why {
			t.Errorf("at %s: %d results, %v %q; want %v %q", tc.at, len(results), ok, why, tc.pass, tc.why)
		}
	}
}

// A kind cairn cannot judge is never healthy, however its members look.
func TestClusterHealthFailsClosedForAnUnknownKind(t *testing.T) {
	for _, role := range []live.Role{live.RoleLeader, live.RolePrimary, "master", ""} {
		obs := &live.Cluster{Kind: "RedisCluster", Name: "r", StatefulSet: live.StatefulSet{Replicas: 1},
			Members: []live.Member{{Name: "r-0", Ready: true, Role: role}}}
		r := Evaluate(plan.Gate{Kind: plan.GateClusterHealthy}, nil, obs, time.Time{})
		if r.Pass || r.Reason == "" {
			t.Errorf("role %q: %+v, want a failing gate with a reason", role, r)
		}
	}
}

// A backup a windowed step relies on starts ahead of the window by as
// long as the last backup took, with BackupLead's margin, and ends inside
// the window; with nothing measured it waits for the window itself.
func TestBackupEndsInWindow(t *testing.T) {
	cs, err := spec.Decode("e.yaml", []byte("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 1, version: \"3.5.21\", maintenanceWindow: {schedule: '0 22 * * *', duration: 2h, timeZone: UTC}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	noWindow, err := spec.Decode("e.yaml", []byte("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 1, version: \"3.5.21\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	took := func(d time.Duration) *live.Cluster {
		obs := etcd(live.Member{Name: "e-0", Ready: true, Role: live.RoleLeader})
		end := day.Add(-48 * time.Hour)
		obs.Backup = &live.Backup{LastSuccessful: live.Timestamp(end.Format(time.RFC3339))}
		if d >= 0 {
			obs.Backup.LastStarted = live.Timestamp(end.Add(-d).Format(time.RFC3339))
		}
		return obs
	}
	g := plan.Gate{Kind: plan.GateBackupEndsInWindow, When: plan.Before}
	for _, tc := range []struct {
		name string
		c    spec.Cluster
		obs  *live.Cluster
		now  time.Time
		pass bool
		why  string
	}{
		{"no window", noWindow[0], took(3 * time.Hour), at(12, 0), true, ""},
		{"nothing measured: the window must be open", cs[0], took(-1), at(21, 0), false, "it opens at 2026-11-30 22:00 UTC"},
		{"nothing measured, the window open", cs[0], took(-1), at(22, 30), true, ""},
		{"a start after its end measures nothing", cs[0], took(-time.Hour), at(21, 0), false, "it opens at 2026-11-30 22:00 UTC"},
		{"3h: too early", cs[0], took(3 * time.Hour), at(17, 0), false,
			"the last backup took 3h0m0s, so the next one starts at 2026-11-30 18:05 UTC, ahead of the window that opens at 2026-11-30 22:00 UTC"},
		{"3h: 3h55m ahead", cs[0], took(3 * time.Hour), at(18, 5), true, ""},
		{"3h: in the window, it would end after it", cs[0], took(3 * time.Hour), at(22, 30), false,
			"the last backup took 3h0m0s, so the next one starts at 2026-12-01 18:05 UTC, ahead of the window that opens at 2026-12-01 22:00 UTC"},
		{"10m: in the window", cs[0], took(10 * time.Minute), at(22, 30), true, ""},
		{"10m: too late in the window", cs[0], took(10 * time.Minute), at(23, 50), false,
			"the last backup took 10m0s, so the next one starts at 2026-12-01 21:37 UTC, ahead of the window that opens at 2026-12-01 22:00 UTC"},
		{"seconds do not show", cs[0], took(10*time.Minute + 20*time.Second), at(23, 50), false,
			"the last backup took 10m0s, so the next one starts at 2026-12-01 21:37 UTC, ahead of the window that opens at 2026-12-01 22:00 UTC"},
		{"30h: 31h10m ahead of the next day's window", cs[0], took(30 * time.Hour), at(14, 50), true, ""},
		{"no backup status", cs[0], etcd(live.Member{Name: "e-0", Ready: true, Role: live.RoleLeader}), at(22, 30), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(g, tc.c, tc.obs, tc.now)
			if r.Pass != tc.pass || r.Reason != tc.why {
				t.Fatalf("pass %v, reason %q; want %v %q", r.Pass, r.Reason, tc.pass, tc.why)
			}
		})
	}
}

func TestBackupLead(t *testing.T) {
	for _, tc := range []struct{ took, lead time.Duration }{
		{0, 0},
		{-time.Minute, 0},
		{4 * time.Minute, 4*time.Minute + time.Minute + 10*time.Minute},
		{2 * time.Hour, 2*time.Hour + 30*time.Minute + 10*time.Minute},
		{10 * time.Hour, 10*time.Hour + time.Hour + 10*time.Minute},
	} {
		if got := BackupLead(tc.took); got != tc.lead {
			t.Errorf("BackupLead(%s) = %s, want %s", tc.took, got, tc.lead)
		}
	}
}
