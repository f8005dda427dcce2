package planner

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// etcdRecover proposes the recovery of a cluster whose quorum has been
// lost for long (live.QuorumLoss.Long), and reports whether it planned
// anything (a step, or a wait saying why it cannot): then nothing else is
// planned. The recovery never happens on its own: it is a step a person
// merges, and a step that cannot be undone.
//
// The new cluster starts from whichever holds more: the member whose data
// is newest (the highest revision among the members that still answer,
// kept with --force-new-cluster) when it is newer than the newest
// verified snapshot, otherwise the snapshot (restored as a new cluster by
// the first member). Every other member sets its data aside and rejoins.
func etcdRecover(r *Result, c *spec.EtcdCluster, obs *live.Cluster) bool {
	if recoveryUnderWay(r, obs) {
		return true
	}
	q := obs.QuorumLost
	if q == nil || !q.Long {
		return false
	}
	id := recoverID(q.Since)
	if obs.RecoverRefused == id {
		return false // quorum came back in between; this loss is over
	}
	var seed *live.Member
	for i := range obs.Members {
		m := &obs.Members[i]
		if m.Revision > 0 && (seed == nil || m.Revision > seed.Revision) {
			seed = m
		}
	}
	b := obs.Backup
	var location string
	if b != nil {
		location = cmp.Or(b.LastLocation, b.StorageLocation)
	}
	haveSnapshot := b != nil && b.LastID != "" && location != "" && b.LastRevision > 0
	members := len(obs.Members)
	p := &plan.EtcdRecoverParams{Members: members, QuorumRevision: q.Revision}
	switch {
	case seed != nil && (!haveSnapshot || seed.Revision > b.LastRevision):
		p.Mode, p.Seed, p.Revision = contract.EtcdRecoverFromMember, seed.Name, seed.Revision
	case haveSnapshot:
		p.Mode, p.Seed, p.Revision = contract.EtcdRecoverFromSnapshot, contract.MemberName(c.Metadata.Name, 0), b.LastRevision
		p.Backup, p.StorageLocation, p.Cluster = b.LastID, location, c.Metadata.Name
		p.Token = c.Metadata.Name + "-" + id
	default:
		r.wait(gate(plan.GateClusterHealthy, plan.Before, fmt.Sprintf(
			"quorum has been lost since %s, and cairn has nothing to recover from: no member answers with its data and the runtime reports no snapshot (spec.backup); bring members back or restore by hand (docs/etcd-recovery.md)", q.Since)))
		return true
	}
	if haveSnapshot {
		p.SnapshotRevision = b.LastRevision
	}
	gates := []plan.Gate{
		gate(plan.GateQuorumLost, plan.Before, "quorum is still lost"),
		{Kind: plan.GateRecoveryStarted, When: plan.After, Revision: id, Description: "the runtime restarted the members for " + id},
	}
	for i := range members {
		name := contract.MemberName(c.Metadata.Name, i)
		gates = append(gates, memberGate(plan.GateMemberVoter, plan.After, name, name+" is a voting member of the recovered cluster"))
	}
	r.add(plan.Step{
		ID:         id,
		Kind:       plan.EtcdRecover,
		Summary:    recoverSummary(c.Metadata.Name, seed, q, p),
		Reversible: false,
		Rollback: "Not reversible: the members start a new cluster. Nothing is deleted: every member's old data stays on its volume, renamed to data.stale-<time>, " +
			"and the snapshot stays in the backup location; going back to the old data means stopping the cluster and putting a member's old data back by hand (docs/etcd-recovery.md). " +
			"Revert this pull request before it syncs if quorum comes back: the runtime and the members also refuse to recover a cluster that has quorum.",
		Gates:  append(gates, healthyAfter()),
		Params: plan.Params{EtcdRecover: p},
	})
	return true
}

// recoverID names the recovery of the quorum loss that began at since:
// the same loss is always proposed under the same ID, a later one under
// another.
func recoverID(since live.Timestamp) string {
	return "etcd-recover-" + strings.ToLower(since.Time().UTC().Format("20060102t150405z"))
}

// recoverSummary says what the recovery keeps and loses, in numbers.
// survivor is the member with the newest data among those that answer;
// nil when none does.
func recoverSummary(cluster string, survivor *live.Member, q *live.QuorumLoss, p *plan.EtcdRecoverParams) string {
	var others []string
	for i := range p.Members {
		if name := contract.MemberName(cluster, i); name != p.Seed {
			others = append(others, name)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Recover %s, whose quorum has been lost since %s: ", cluster, q.Since.Time().UTC().Format(time.RFC3339))
	switch p.Mode {
	case contract.EtcdRecoverFromMember:
		fmt.Fprintf(&b, "%s keeps its data (revision %d", p.Seed, p.Revision)
		if p.SnapshotRevision > 0 {
			fmt.Fprintf(&b, ", %d revisions newer than the newest snapshot", p.Revision-p.SnapshotRevision)
		}
		fmt.Fprintf(&b, ") and starts once with --force-new-cluster as the only member; the cluster keeps its cluster ID")
	default:
		fmt.Fprintf(&b, "%s restores snapshot %s (revision %d) as a new cluster; clients see a new cluster ID", p.Seed, p.Backup, p.Revision)
		if survivor != nil {
			fmt.Fprintf(&b, "; the newest data of a member that still answers is at revision %d and is set aside", survivor.Revision)
		}
	}
	fmt.Fprintf(&b, ". %s set their data aside (renamed, not deleted) and rejoin one at a time as learners. The cluster comes back at revision %d", strings.Join(others, ", "), p.Revision)
	switch {
	case q.Revision > p.Revision:
		fmt.Fprintf(&b, "; the runtime last recorded revision %d with quorum, so at least %d revisions are lost", q.Revision, q.Revision-p.Revision)
	case q.Revision > 0:
		fmt.Fprintf(&b, "; the runtime last recorded revision %d with quorum, and nothing up to it is lost (writes after that record may be)", q.Revision)
	default:
		b.WriteString("; the runtime recorded no revision with quorum, so what is lost cannot be counted")
	}
	b.WriteString(".")
	return b.String()
}

// recoveryUnderWay waits while the members of a recovery the runtime
// carried out rejoin: a member not yet back is not one leaving the
// cluster, nor one to replace.
func recoveryUnderWay(r *Result, obs *live.Cluster) bool {
	id := obs.Recovering
	if id == "" || obs.RecoverDone != id || obs.QuorumLost != nil {
		return false
	}
	for _, m := range obs.Members {
		if !m.IsVoter() || !m.Ready {
			r.wait(memberGate(plan.GateMemberVoter, plan.Before, m.Name, fmt.Sprintf("recovery %s is under way: %s rejoins the recovered cluster (the members rejoin one at a time)", id, m.Name)))
			return true
		}
	}
	return false
}
