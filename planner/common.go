package planner

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// createStep deploys a cluster that does not run yet.
func createStep(c spec.Cluster, members int, noun string) plan.Step {
	cm := c.Common()
	s := plan.Step{
		ID:         "create",
		Kind:       plan.CreateCluster,
		Summary:    fmt.Sprintf("Create %s with %d %s at %s, %s each", c.Ref().Name, members, noun, cm.Version, cm.Storage),
		Reversible: true,
		Rollback:   "Close or revert the pull request before it syncs. Once the cluster runs, removing it is a manual decision: cairn never deletes a database or its volumes.",
		Gates:      []plan.Gate{healthyAfter()},
		Params: plan.Params{CreateCluster: &plan.CreateClusterParams{
			Version: cm.Version, Members: members, Storage: string(cm.Storage),
		}},
	}
	if r := cm.RestoreFrom; r != nil {
		src := &plan.RestoreSource{StorageLocation: string(r.StorageLocation), Cluster: r.Cluster, Backup: r.Backup}
		if src.Cluster == "" {
			src.Cluster = c.Ref().Name
		}
		if src.Backup == "" {
			src.Backup = contract.RestoreLatest
		}
		s.Params.CreateCluster.RestoreFrom = src
		s.Summary += fmt.Sprintf(", restored from backup %s of %s at %s", src.Backup, src.Cluster, src.StorageLocation)
	}
	if cm.Backup != nil {
		s.Gates = append(s.Gates, gate(plan.GateBackupConfigured, plan.After, "the runtime runs the spec's backup schedule"))
	}
	return s
}

// refuseShrink refuses a storage shrink; volumes only grow.
func refuseShrink(r *Result, c spec.Cluster, obs *live.Cluster) {
	want := c.Common().Storage
	if obs.Storage == "" || want.Cmp(spec.Quantity(obs.Storage)) >= 0 {
		return
	}
	r.refuse(RuleStorageShrink, "spec.storage",
		"storage cannot shrink from %s to %s: Kubernetes volumes only grow. Keep %s (or more); for smaller volumes, restore a backup into a new cluster",
		obs.Storage, want, obs.Storage)
}

// storageStep grows every member's volume when the spec asks for more.
func storageStep(r *Result, c spec.Cluster, obs *live.Cluster) {
	want := c.Common().Storage
	if obs.Storage == "" || want.Cmp(spec.Quantity(obs.Storage)) <= 0 {
		return
	}
	r.add(plan.Step{
		ID:       "expand-storage-" + quantityID(want),
		Kind:     plan.ExpandStorage,
		Summary:  fmt.Sprintf("Grow every member's volume from %s to %s (online PVC expansion)", obs.Storage, want),
		Rollback: "Volumes cannot shrink. If the expansion fails, the PVCs keep their old size and report the error in their conditions; fix the StorageClass (allowVolumeExpansion) and re-sync.",
		Gates: []plan.Gate{
			healthyBefore(),
			{Kind: plan.GateStorageCapacity, When: plan.After, Quantity: string(want), Description: "every member's volume reports at least " + string(want)},
		},
		Params: plan.Params{ExpandStorage: &plan.ExpandStorageParams{From: obs.Storage, To: string(want)}},
	})
}

// backupStep changes the backup policy the runtime runs when it differs
// from the spec.
func backupStep(r *Result, c spec.Cluster, obs *live.Cluster) {
	want := backupSettings(c.Common().Backup)
	have := observedBackup(obs.Backup)
	if equalBackup(want, have) {
		return
	}
	summary := "Turn off scheduled backups (existing backups are kept)"
	if want != nil {
		summary = fmt.Sprintf("Back up on %q (%s) to %s", want.Schedule, want.TimeZone, want.StorageLocation)
	}
	r.add(plan.Step{
		ID:         "configure-backup",
		Kind:       plan.ConfigureBackup,
		Summary:    summary,
		Reversible: true,
		Rollback:   "Revert the pull request; the previous schedule resumes. No backup is deleted by a schedule change.",
		Gates:      []plan.Gate{gate(plan.GateBackupConfigured, plan.After, "the runtime runs the spec's backup schedule")},
		Params:     plan.Params{ConfigureBackup: &plan.ConfigureBackupParams{From: have, To: want}},
	})
}

func backupSettings(b *spec.Backup) *plan.BackupSettings {
	if b == nil {
		return nil
	}
	s := &plan.BackupSettings{Schedule: string(b.Schedule), TimeZone: b.TimeZone, StorageLocation: string(b.StorageLocation)}
	if b.Retention != nil {
		s.RetentionCount, s.RetentionMaxAge = b.Retention.Count, string(b.Retention.MaxAge)
	}
	return s
}

func observedBackup(b *live.Backup) *plan.BackupSettings {
	if b == nil || b.Schedule == "" {
		return nil
	}
	tz := b.TimeZone
	if tz == "" {
		tz = spec.DefaultTimeZone
	}
	return &plan.BackupSettings{Schedule: b.Schedule, TimeZone: tz, StorageLocation: b.StorageLocation,
		RetentionCount: b.RetentionCount, RetentionMaxAge: b.RetentionMaxAge}
}

func equalBackup(a, b *plan.BackupSettings) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// sealStep ends a cluster's creation when no other step would: while the
// rendered config still says bootstrap=new, a member that lost its data
// could bootstrap alone.
func sealStep(r *Result, obs *live.Cluster) {
	if len(r.Steps) > 0 || obs.Bootstrap != "new" {
		return
	}
	r.add(seal())
}

// seal is the step that ends a creation; a create plan ends with it.
func seal() plan.Step {
	return plan.Step{
		ID:         "seal-bootstrap",
		Kind:       plan.SealBootstrap,
		Summary:    "End the creation: members that lose their data rejoin the running cluster instead of bootstrapping (a config change, no restart)",
		Reversible: true,
		Rollback:   "Nothing to undo; the cluster runs on unchanged.",
		Gates:      []plan.Gate{healthyBefore()},
		Params:     plan.Params{SealBootstrap: &plan.SealBootstrapParams{}},
	}
}

// settle waits for what the StatefulSet and the pods have not finished:
// pods still to be created or removed, members not ready, members not yet
// rolled to the template's version. It reports whether anything is pending.
func settle(r *Result, obs *live.Cluster) bool {
	sts := obs.StatefulSet
	if sts.Replicas == 0 && len(obs.Members) == 0 {
		r.wait(gate(plan.GateStatefulSetSettled, plan.Before, "the StatefulSet runs no pods (scaled to 0 by hand?); cairn plans nothing until its replicas are restored"))
		return true
	}
	for i, m := range obs.Members {
		if i != m.Ordinal() {
			name := contract.MemberName(obs.Name, i)
			r.wait(memberGate(plan.GateMemberReady, plan.Before, name, "the StatefulSet recreates "+name))
			return true
		}
		if m.Ordinal() >= sts.UpdatePartition && sts.Version != "" && m.Version != sts.Version {
			r.wait(plan.Gate{Kind: plan.GateMemberVersion, Member: m.Name, Version: sts.Version,
				Description: fmt.Sprintf("%s restarts at %s", m.Name, sts.Version)})
		}
	}
	for ord := len(obs.Members); ord < sts.Replicas; ord++ {
		name := contract.MemberName(obs.Name, ord)
		r.wait(memberGate(plan.GateMemberReady, plan.Before, name, "the StatefulSet creates "+name+" and it becomes ready"))
	}
	if len(obs.Members) > sts.Replicas {
		r.wait(gate(plan.GateStatefulSetSettled, plan.Before, fmt.Sprintf("the StatefulSet scales in to %d pods", sts.Replicas)))
	}
	return len(r.Waiting) > 0
}

// notReady waits for every member that is not ready.
func notReady(r *Result, obs *live.Cluster) bool {
	found := false
	for _, m := range obs.Members {
		if !m.Ready {
			r.wait(memberGate(plan.GateMemberReady, plan.Before, m.Name, m.Name+" is ready"))
			found = true
		}
	}
	return found
}
