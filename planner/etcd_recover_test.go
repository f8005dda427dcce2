package planner

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// lostQuorum is a 3-member cluster "e" at 3.7.3 whose e-1 and e-2 are gone
// and whose e-0 answers at revision survivor (0: it does not answer);
// long says the loss has lasted past the recovery delay, snapshot is the
// newest snapshot's revision (0: none).
func lostQuorum(survivor, snapshot int64, long bool) *live.Cluster {
	return with(etcdLive(3, "3.7.3", 0), func(c *live.Cluster) {
		for i := range c.Members {
			c.Members[i].Role, c.Members[i].Ready = live.RoleUnknown, false
		}
		c.Members[0].Revision = survivor
		c.QuorumLost = &live.QuorumLoss{Since: "2026-11-30T08:00:00Z", Long: long, Revision: 120}
		if snapshot > 0 {
			c.Backup = &live.Backup{Schedule: "@daily", StorageLocation: "s3://backups/e", LastID: "20261130T070000Z-aa", LastRevision: snapshot, LastSuccessful: "2026-11-30T07:00:05Z"}
		}
	})
}

const recoverStep = "etcd-recover-20261130t080000z"

func TestEtcdQuorumLossRecovery(t *testing.T) {
	backup := []string{"backup:", `  schedule: "@daily"`, `  storageLocation: "s3://backups/e"`}
	recoverWith := func(mode, seed string, revision int64, says ...string) func(*testing.T, plan.Plan) {
		return func(t *testing.T, p plan.Plan) {
			s := step(t, p, recoverStep)
			r := s.Params.EtcdRecover
			if r == nil || r.Mode != mode || r.Seed != seed || r.Revision != revision || r.Members != 3 || r.QuorumRevision != 120 {
				t.Fatalf("recovery %+v", r)
			}
			if s.Reversible || !s.Kind.Irreversible() {
				t.Error("a recovery is irreversible: a person merges it, never a policy")
			}
			if !hasGate(s, plan.GateQuorumLost, plan.Before) || !hasGate(s, plan.GateRecoveryStarted, plan.After) || !hasGate(s, plan.GateClusterHealthy, plan.After) {
				t.Errorf("gates %+v", s.Gates)
			}
			for _, want := range says {
				if !strings.Contains(s.Summary, want) {
					t.Errorf("summary does not say %q:\n%s", want, s.Summary)
				}
			}
		}
	}
	runCases(t, []planCase{
		{name: "lost, not for long: wait", desired: etcdSpec(t, 3, "3.7.3", backup...), observed: lostQuorum(100, 90, false),
			status: plan.StatusWaiting, waiting: "quorum is lost (0 of 3 voters healthy)"},
		{name: "the survivor is newer than the snapshot: keep its data", desired: etcdSpec(t, 3, "3.7.3", backup...), observed: lostQuorum(100, 90, true),
			status: plan.StatusPlanned, steps: []string{recoverStep},
			check: recoverWith(contract.EtcdRecoverFromMember, "e-0", 100, "e-0 keeps its data (revision 100, 10 revisions newer than the newest snapshot)",
				"keeps its cluster ID", "e-1, e-2 set their data aside", "at least 20 revisions are lost")},
		{name: "the snapshot is newer: restore it", desired: etcdSpec(t, 3, "3.7.3", backup...), observed: lostQuorum(80, 90, true),
			status: plan.StatusPlanned, steps: []string{recoverStep},
			check: recoverWith(contract.EtcdRecoverFromSnapshot, "e-0", 90, "restores snapshot 20261130T070000Z-aa (revision 90)", "new cluster ID",
				"a member that still answers is at revision 80 and is set aside", "at least 30 revisions are lost")},
		{name: "no member answers: the snapshot", desired: etcdSpec(t, 3, "3.7.3", backup...), observed: lostQuorum(0, 90, true),
			status: plan.StatusPlanned, steps: []string{recoverStep},
			check: recoverWith(contract.EtcdRecoverFromSnapshot, "e-0", 90)},
		{name: "no snapshot: the survivor", desired: etcdSpec(t, 3, "3.7.3"), observed: lostQuorum(100, 0, true),
			status: plan.StatusPlanned, steps: []string{recoverStep},
			check: recoverWith(contract.EtcdRecoverFromMember, "e-0", 100)},
		{name: "nothing to recover from", desired: etcdSpec(t, 3, "3.7.3"), observed: lostQuorum(0, 0, true),
			status: plan.StatusWaiting, waiting: "cairn has nothing to recover from"},
		{name: "refused by the runtime (quorum came back in between): not proposed again", desired: etcdSpec(t, 3, "3.7.3", backup...),
			observed: with(lostQuorum(100, 90, true), func(c *live.Cluster) { c.RecoverRefused = recoverStep }),
			status:   plan.StatusWaiting, waiting: "quorum is lost"},
		{name: "carried out, members rejoining: wait, plan no scale-in", desired: etcdSpec(t, 3, "3.7.3", backup...),
			observed: with(etcdLive(3, "3.7.3", 0), func(c *live.Cluster) {
				c.Recovering, c.RecoverDone = recoverStep, recoverStep
				c.Members[1].Role = live.RoleLearner
				c.Members[2].Role, c.Members[2].Ready = live.RoleRemoved, false
			}),
			status: plan.StatusWaiting, waiting: "e-1 rejoins the recovered cluster"},
		{name: "carried out, every member back: converged", desired: etcdSpec(t, 3, "3.7.3", backup...),
			observed: with(etcdLive(3, "3.7.3", 0), func(c *live.Cluster) {
				c.Recovering, c.RecoverDone = recoverStep, recoverStep
				c.Backup = &live.Backup{Schedule: "@daily", StorageLocation: "s3://backups/e"}
			}),
			status: plan.StatusConverged},
	})
}

// The same loss is proposed under the same ID, byte for byte; a later
// loss under another.
func TestEtcdRecoveryIsStable(t *testing.T) {
	c := etcdSpec(t, 3, "3.7.3")
	a := kinds.PlanCluster(c, lostQuorum(100, 0, true), nil)
	b := kinds.PlanCluster(c, lostQuorum(100, 0, true), nil)
	if plan.Fingerprint(a) != plan.Fingerprint(b) {
		t.Error("two plans of the same loss differ")
	}
	later := lostQuorum(100, 0, true)
	later.QuorumLost.Since = "2026-12-01T09:30:00Z"
	if p := kinds.PlanCluster(c, later, nil); len(p.Steps) != 1 || p.Steps[0].ID != "etcd-recover-20261201t093000z" {
		t.Errorf("a later loss: %v", stepIDs(p))
	}
}
