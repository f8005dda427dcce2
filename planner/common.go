package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// createStep deploys a cluster that does not run yet, its pod template
// at revision (the kind's template revision of the spec).
func createStep(c spec.Cluster, members int, noun, revision string) plan.Step {
	cm := c.Common()
	s := plan.Step{
		ID:         "create",
		Kind:       plan.CreateCluster,
		Summary:    fmt.Sprintf("Create %s with %d %s at %s, %s each", c.Ref().Name, members, noun, cm.Version, cm.Storage),
		Reversible: true,
		Rollback:   "Close or revert the pull request before it syncs. Once the cluster runs, removing it is a manual decision: cairn never deletes a database or its volumes.",
		Gates:      []plan.Gate{healthyAfter()},
		Params: plan.Params{CreateCluster: &plan.CreateClusterParams{
			Version: cm.Version, Members: members, Storage: string(cm.Storage), TemplateRevision: revision,
		}},
	}
	if r := cm.RestoreFrom; r != nil {
		src := &plan.RestoreSource{StorageLocation: string(r.StorageLocation), Cluster: r.Cluster, Backup: r.Backup, TargetTime: r.TargetTime}
		src.ForeignBucket, _ = spec.ForeignBucket(cm.Backup, r.StorageLocation)
		if src.Cluster == "" {
			src.Cluster = c.Ref().Name
		}
		if src.Backup == "" {
			src.Backup = contract.RestoreLatest
		}
		s.Params.CreateCluster.RestoreFrom = src
		s.Summary += fmt.Sprintf(", restored from backup %s of %s at %s", src.Backup, src.Cluster, src.StorageLocation)
		if src.TargetTime != "" {
			s.Summary += ", replaying its archived WAL to " + src.TargetTime
		}
		if src.ForeignBucket {
			s.Summary += "; that bucket is not the cluster's own, trusted by spec.restoreFrom.trustForeignBucket"
		}
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
	if s, ok := expandStep(c, obs); ok {
		r.add(s)
	}
}

// relieveWhileWaiting plans, while the plan waits (and is not refused),
// the steps that relieve what it waits for (relief.go): those of the
// kind's relief, given what the plan waits for, then a storage growth the
// spec asks for (an online PVC expansion restarts nothing and needs no
// healthy member, and a member that is down because its volume is full
// comes back only once it has grown). Those steps alone are planned; the
// rest waits as before.
func relieveWhileWaiting(r *Result, c spec.Cluster, obs *live.Cluster, relief func(while string) []plan.Step) {
	if len(r.Refusals) > 0 || len(r.Waiting) == 0 {
		return
	}
	while := "the cluster waits (" + r.Waiting[0].Description + ")"
	var steps []plan.Step
	if relief != nil {
		steps = relief(while)
	}
	if s, ok := expandStep(c, obs); ok {
		relieve(&s, while, "growing volumes restarts nothing, and a member whose volume is full comes back only once it has grown")
		steps = append(steps, s)
	}
	if len(steps) == 0 {
		return
	}
	r.Waiting = nil
	for _, s := range steps {
		r.add(s)
	}
}

func expandStep(c spec.Cluster, obs *live.Cluster) (plan.Step, bool) {
	want := c.Common().Storage
	if obs.Storage == "" || want.Cmp(spec.Quantity(obs.Storage)) <= 0 {
		return plan.Step{}, false
	}
	return plan.Step{
		ID:       "expand-storage-" + quantityID(want),
		Kind:     plan.ExpandStorage,
		Summary:  fmt.Sprintf("Grow every member's volume from %s to %s (online PVC expansion)", obs.Storage, want),
		Rollback: "Volumes cannot shrink. If the expansion fails, the PVCs keep their old size and report the error in their conditions; fix the StorageClass (allowVolumeExpansion) and re-sync.",
		Gates: []plan.Gate{
			healthyBefore(),
			{Kind: plan.GateStorageCapacity, When: plan.After, Quantity: string(want), Description: "every member's volume reports at least " + string(want)},
		},
		Params: plan.Params{ExpandStorage: &plan.ExpandStorageParams{From: obs.Storage, To: string(want)}},
	}, true
}

// backupStep changes the backup policy the runtime runs when it differs
// from the spec. A retention that shortens deletes backups that do not
// come back, so that step is not reversible.
func backupStep(r *Result, c spec.Cluster, obs *live.Cluster) {
	want := backupSettings(c.Common().Backup)
	have := observedBackup(obs.Backup)
	if equalBackup(want, have) {
		return
	}
	s := plan.Step{
		ID:         "configure-backup",
		Kind:       plan.ConfigureBackup,
		Summary:    "Turn off scheduled backups (existing backups are kept)",
		Reversible: true,
		Rollback:   "Set spec.backup back: cairn plans the previous schedule as another step. No backup is deleted by a schedule change.",
		Gates:      []plan.Gate{gate(plan.GateBackupConfigured, plan.After, "the runtime runs the spec's backup schedule")},
		Params:     plan.Params{ConfigureBackup: &plan.ConfigureBackupParams{From: have, To: want}},
	}
	if want != nil {
		s.Summary = fmt.Sprintf("Back up on %q (%s) to %s", want.Schedule, want.TimeZone, want.StorageLocation)
	}
	if retentionShortens(have, want) {
		s.Summary += fmt.Sprintf("; retention shortens from %s to %s: older backups are deleted once the next backup completes (backups pinned for a rollback are kept until released)",
			retentionText(have), retentionText(want))
		s.Reversible = false
		s.Rollback = fmt.Sprintf("Not reversible for the backups already deleted: they do not come back. Reverting the pull request restores the old retention (%s) for the backups not yet deleted.", retentionText(have))
	}
	r.add(s)
}

// retentionShortens reports whether the retention to deletes backups that
// from keeps: a count or a maximum age added, or lowered. Turning backups
// on or off changes no retention (off deletes nothing).
func retentionShortens(from, to *plan.BackupSettings) bool {
	if from == nil || to == nil {
		return false
	}
	fewer := to.RetentionCount > 0 && (from.RetentionCount == 0 || to.RetentionCount < from.RetentionCount)
	return fewer || ageShortens(from.RetentionMaxAge, to.RetentionMaxAge)
}

func ageShortens(from, to string) bool {
	switch {
	case to == "":
		return false
	case from == "":
		return true
	}
	f, ferr := spec.Duration(from).Parse()
	t, terr := spec.Duration(to).Parse()
	if ferr != nil || terr != nil {
		return from != to // what cannot be compared may shorten
	}
	return t < f
}

// retentionText is a retention for a person: "keep all", "7 backups",
// "7 backups / 30d".
func retentionText(b *plan.BackupSettings) string {
	var parts []string
	if b.RetentionCount > 0 {
		parts = append(parts, fmt.Sprintf("%d backups", b.RetentionCount))
	}
	if b.RetentionMaxAge != "" {
		parts = append(parts, b.RetentionMaxAge)
	}
	if len(parts) == 0 {
		return "keep all"
	}
	return strings.Join(parts, " / ")
}

// A step that cannot be undone (a PostgreSQL major upgrade, the last
// member of an etcd minor upgrade) relies on a backup its rollback
// restores: a TakeBackup step right before it asks the runtime for one,
// and the step is gated on a backup younger than PreStepBackupMaxAge.
//
// The planner has no clock, so it cannot tell when that backup has grown
// too old; the observer can, and reports the newest backup stale
// (live.Backup.Stale, past contract.BackupFreshFor, the same age). The
// planner then asks again under the next request ID, since the runtime
// serves each ID once: backup-before-15.4, backup-before-15.4-2, ...
// Together with the TakeBackup step's window gate, a step waiting past its
// window for review gets a new backup in its next window, right before it,
// and never waits on a freshness gate that nothing would satisfy.

// preStepBackup is the ID of the TakeBackup request a step relies on, base
// its first ID, and whether the runtime has served it with a backup that
// is still fresh.
func preStepBackup(b *live.Backup, base string) (id string, done bool) {
	gen := requestGeneration(b, base)
	switch {
	case gen == 0:
		return base, false
	case !b.Stale:
		return b.LastRequest, true
	}
	return fmt.Sprintf("%s-%d", base, gen+1), false
}

// requestGeneration is 1 when the last request the runtime served is base,
// n when it is base-n, and 0 when it is neither.
func requestGeneration(b *live.Backup, base string) int {
	if b == nil {
		return 0
	}
	if b.LastRequest == base {
		return 1
	}
	rest, ok := strings.CutPrefix(b.LastRequest, base+"-")
	if n, err := strconv.Atoi(rest); ok && err == nil && n > 1 && strconv.Itoa(n) == rest {
		return n
	}
	return 0
}

// takeBackupStep asks the runtime for a backup now. The runtime pins the
// backup it takes for the request (runtime/backup/pin.go): retention
// keeps it until a person releases it. held gates it on the maintenance
// window, as the disruptive step that relies on it is, so both can go in
// one window. The step is done once the runtime reports the request
// served (live.Backup.LastRequest), and the planner leaves it out from
// then on; it has no freshness gate of its own, which would turn false
// again as the backup ages and hold the cluster on a merged step.
func takeBackupStep(c spec.Cluster, id, summary, reason string, held bool) plan.Step {
	var gates []plan.Gate
	if w := c.Common().MaintenanceWindow; w != nil && held {
		gates = append(gates, gate(plan.GateBackupEndsInWindow, plan.Before, fmt.Sprintf("a backup started now ends inside the maintenance window (%q for %s, %s), if it runs as long as the last one did", w.Schedule, w.Duration, w.TimeZone)))
	}
	return plan.Step{
		ID:         id,
		Kind:       plan.TakeBackup,
		Summary:    summary + "; the runtime pins it against retention until a person releases it (cairn backup release)",
		Reversible: true,
		Rollback:   "Nothing to undo. The backup stays pinned, kept whatever the retention, until released with cairn backup release once the rollback that restores it is no longer wanted.",
		Gates:      append(gates, healthyBefore()),
		Params:     plan.Params{TakeBackup: &plan.TakeBackupParams{Reason: reason}},
	}
}

// freshBackupGate holds a step until the backup it relies on is fresh.
func freshBackupGate() plan.Gate {
	return plan.Gate{Kind: plan.GateBackupFresh, When: plan.Before, MaxAge: PreStepBackupMaxAge,
		Description: "a verified backup younger than " + PreStepBackupMaxAge + " exists"}
}

// refuseShorterRetention refuses a plan that shortens the backup
// retention while step relies on the backup of request id. The runtime
// pins that backup once taken, but a retention that shortens under a plan
// relying on it is refused all the same: it may shorten once step is done.
func refuseShorterRetention(r *Result, id, step string) {
	for _, rf := range r.Refusals {
		if rf.Rule == RuleBackupRetentionPinned {
			return
		}
	}
	for _, s := range r.Steps {
		if p := s.Params.ConfigureBackup; s.Kind == plan.ConfigureBackup && p != nil && retentionShortens(p.From, p.To) {
			r.refuse(RuleBackupRetentionPinned, "spec.backup.retention",
				"the backup retention would shorten from %s to %s while %s relies on the backup from step %s, which its rollback restores; keep the retention at %s until that step is done, then shorten it (the runtime keeps that backup pinned until cairn backup release)",
				retentionText(p.From), retentionText(p.To), step, id, retentionText(p.From))
			return
		}
	}
}

// insertStep puts s before the step at index at, with add's checks.
func insertStep(r *Result, at int, s plan.Step) {
	if !plan.ValidStepID(s.ID) || r.hasID(s.ID) {
		panic(fmt.Sprintf("planner: step ID %q is invalid or not unique in %v", s.ID, r.ids()))
	}
	r.Steps = slices.Insert(r.Steps, at, s)
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
		if m.Ordinal() >= sts.UpdatePartition && sts.TemplateRevision != "" && m.TemplateRevision != sts.TemplateRevision {
			r.wait(plan.Gate{Kind: plan.GateMemberRestarted, Member: m.Name, Revision: sts.TemplateRevision,
				Description: fmt.Sprintf("%s restarts with pod template revision %s", m.Name, sts.TemplateRevision)})
		}
	}
	for ord := len(obs.Members); ord < sts.Replicas; ord++ {
		name := contract.MemberName(obs.Name, ord)
		r.wait(memberGate(plan.GateMemberReady, plan.Before, name, "the StatefulSet creates "+name+" and it becomes ready"))
	}
	if len(obs.Members) > sts.Replicas {
		r.wait(gate(plan.GateStatefulSetSettled, plan.Before, "the StatefulSet scales in to "+pods(sts.Replicas)))
	}
	return len(r.Waiting) > 0
}

// notReady waits for every member that is not ready, but those at or
// above leaving, which the plan removes anyway: a replica that is going
// away does not block the step that removes it.
func notReady(r *Result, obs *live.Cluster, leaving int) bool {
	found := false
	for _, m := range obs.Members {
		if !m.Ready && m.Ordinal() < leaving {
			r.wait(memberGate(plan.GateMemberReady, plan.Before, m.Name, m.Name+" is ready"))
			found = true
		}
	}
	return found
}

// pods says a number of pods: "1 pod", "3 pods".
func pods(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// moveVerb is how a step's summary names a version change: a move to an
// older version is no upgrade.
func moveVerb(from, to spec.Version) string {
	if to.Compare(from) < 0 {
		return "Downgrade"
	}
	return "Upgrade"
}

// leavingFrom is the lowest ordinal the spec removes: want when the cluster
// has more members than that, else past the last member.
func leavingFrom(obs *live.Cluster, want int) int {
	if want >= 1 && want < len(obs.Members) {
		return want
	}
	return len(obs.Members)
}

// healthyBelow is the before-gate of a step that removes members down to
// size: the members that stay are ready and the cluster is healthy; the
// state of the leaving ones does not matter.
func healthyBelow(size int) plan.Gate {
	return plan.Gate{Kind: plan.GateClusterHealthy, When: plan.Before, Below: size,
		Description: fmt.Sprintf("the %s that stay are ready and the cluster is healthy", members(size))}
}

func members(n int) string {
	if n == 1 {
		return "1 member"
	}
	return fmt.Sprintf("%d members", n)
}
