package planner

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// What keeps etcd within its space quota (spec.compaction,
// spec.spaceQuota), and what the plan does while etcd raises an alarm.
//
// The compaction policy is the runtime's to run: a change of it is an
// EtcdConfigureCompaction step that changes only the rendered config the
// runtime reads. The space quota is a member flag the instance manager
// passes to etcd at start: a change of it is a rolling restart
// (etcdTemplate), whose first step changes the rendered config and the
// template's revision together.

// compactionStep changes the compaction policy when it differs from the
// one the rendered config sets. A policy that keeps less history (turned
// on, a shorter retention, another mode) drops revisions that do not
// come back, so that step is not reversible.
func compactionStep(r *Result, c *spec.EtcdCluster, obs *live.Cluster) {
	p := c.Spec.CompactionPolicy()
	want := plan.CompactionSettings{Mode: p.Mode, Retention: string(p.Retention)}
	var have *plan.CompactionSettings
	if obs.Compaction != nil {
		have = &plan.CompactionSettings{Mode: obs.Compaction.Mode, Retention: obs.Compaction.Retention}
		if *have == want {
			return
		}
	}
	s := plan.Step{
		ID:         "configure-compaction",
		Kind:       plan.EtcdConfigureCompaction,
		Summary:    fmt.Sprintf("Compact etcd's history, keeping %s; the runtime compacts, no member restarts", compactionText(want)),
		Reversible: true,
		Rollback:   "Set spec.compaction back: cairn plans the old policy as another step. Revisions compacted meanwhile do not come back.",
		Gates: []plan.Gate{{Kind: plan.GateCompactionApplied, When: plan.After,
			Description: "the runtime reports that it compacts keeping " + compactionText(want)}},
		Params: plan.Params{EtcdConfigureCompaction: &plan.EtcdConfigureCompactionParams{From: have, To: want}},
	}
	if have == nil {
		s.Summary += "; today nothing compacts it, so every revision of every key is kept and the database grows until the space quota stops writes"
	}
	if keepsLess(have, want) {
		s.Reversible = false
		s.Rollback = "Not reversible for the revisions it compacts: they do not come back, and a watch that resumes from one of them must re-list. Setting spec.compaction back plans the old policy for the history not compacted yet."
		if have != nil {
			s.Rollback += " The old policy kept " + compactionText(*have) + "."
		}
	}
	r.add(s)
}

// keepsLess reports whether policy to keeps less history than from:
// compaction turned on, a shorter retention, or a change of mode (which
// cannot be compared, and may).
func keepsLess(from *plan.CompactionSettings, to plan.CompactionSettings) bool {
	if from == nil || from.Mode != to.Mode {
		return true
	}
	switch to.Mode {
	case contract.EtcdCompactionPeriodic:
		f, ferr := spec.CompactionRetention(from.Retention).Period()
		t, terr := spec.CompactionRetention(to.Retention).Period()
		return ferr != nil || terr != nil || t < f
	default:
		f, ferr := spec.CompactionRetention(from.Retention).Revisions()
		t, terr := spec.CompactionRetention(to.Retention).Revisions()
		return ferr != nil || terr != nil || t < f
	}
}

// compactionText says a policy: "1h of history (periodic)", "the last
// 10000 revisions (revision)"; "no compaction" for the zero policy.
func compactionText(p plan.CompactionSettings) string {
	switch p.Mode {
	case "":
		return "every revision (no compaction)"
	case contract.EtcdCompactionPeriodic:
		return p.Retention + " of history (periodic)"
	}
	return "the last " + p.Retention + " revisions (revision)"
}

// renderedQuota is the space quota the rendered config sets, in bytes:
// etcd's default when it sets none.
func renderedQuota(obs *live.Cluster) int64 {
	if n, err := strconv.ParseInt(obs.SpaceQuota, 10, 64); err == nil && n > 0 {
		return n
	}
	return contract.EtcdDefaultQuotaBytes
}

// quotaChange is the spec's space quota, in bytes, when it differs from
// the rendered config's.
func quotaChange(c *spec.EtcdCluster, obs *live.Cluster) (string, bool) {
	want := c.Spec.QuotaBytes()
	if want == renderedQuota(obs) {
		return "", false
	}
	return strconv.FormatInt(want, 10), true
}

// quotaInputs are what a template revision hashes of the space quota:
// nothing at etcd's default, so that the revisions of clusters that never
// set one stay what they were.
func quotaInputs(c *spec.EtcdCluster) map[string]string {
	if q := c.Spec.QuotaBytes(); q != contract.EtcdDefaultQuotaBytes {
		return map[string]string{contract.KeyEtcdQuotaBackendBytes: strconv.FormatInt(q, 10)}
	}
	return nil
}

// quotaText says a quota change for summaries.
func quotaText(obs *live.Cluster, to string) string {
	n, _ := strconv.ParseInt(to, 10, 64)
	s := fmt.Sprintf("space quota %s -> %s", bytesText(renderedQuota(obs)), bytesText(n))
	if n > spec.EtcdSuggestedMaxQuota {
		s += " (above the 8Gi etcd suggests: it warns at start, and larger databases take longer to defragment, snapshot and restore)"
	}
	return s
}

// bytesText is a byte count as a quantity: 2Gi, 3Mi, 1000.
func bytesText(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

// refuseQuotaBelowData refuses a space quota the data in use does not
// fit below with the runtime's margin: the members would raise NOSPACE
// as they restart, and the runtime could not disarm it.
func refuseQuotaBelowData(r *Result, c *spec.EtcdCluster, obs *live.Cluster) {
	var inUse int64
	var who string
	for _, m := range obs.Members {
		if m.DBSizeInUse > inUse {
			inUse, who = m.DBSizeInUse, m.Name
		}
	}
	want := c.Spec.QuotaBytes()
	need := (inUse*100/contract.EtcdDisarmBelowPercent + 1<<20 - 1) &^ (1<<20 - 1) // whole MiB, rounded up
	if inUse == 0 || want >= need || want >= renderedQuota(obs) {
		return
	}
	r.refuse(RuleEtcdSpaceQuotaBelowData, "spec.spaceQuota",
		"a space quota of %s is too small for the data: %s holds %s in use, and the runtime keeps every member's database below %d%% of the quota, so it needs at least %s. Keep %s, or delete data first (compaction and defragmentation give back only what is no longer in use)",
		bytesText(want), who, bytesText(inUse), contract.EtcdDisarmBelowPercent, bytesText(need), bytesText(renderedQuota(obs)))
}

// etcdAlarms is what the plan does while etcd raises an alarm: CORRUPT
// holds everything; NOSPACE holds everything but what fixes it (a
// compaction policy that keeps less, a space quota raise and its rolling
// restart, a volume growth), which it plans. It reports whether the plan
// stops here.
func etcdAlarms(r *Result, c *spec.EtcdCluster, obs *live.Cluster, images map[string]string) bool {
	corrupt, nospace := alarmed(obs, contract.EtcdAlarmCorrupt), alarmed(obs, contract.EtcdAlarmNoSpace)
	switch {
	case len(corrupt) > 0:
		r.wait(gate(plan.GateClusterHealthy, plan.Before, fmt.Sprintf(
			"etcd raised CORRUPT on %s: its data disagrees with the other members' at the same revision. cairn never disarms it and plans nothing until it is cleared: take a snapshot from a healthy member (cairn backup run), replace %s (delete its volume claim and pod; the runtime removes it and it rejoins as a learner with a copy of a healthy member's data), check that etcdctl endpoint hashkv --cluster agrees, then run etcdctl alarm disarm (docs/etcd-recovery.md)",
			strings.Join(corrupt, ", "), strings.Join(corrupt, ", "))))
		return true
	case len(nospace) == 0 || !quorate(obs):
		return false // quorum first: etcdWaits says what to do
	}
	n := len(r.Steps)
	compactionStep(r, c, obs)
	if i := len(r.Steps) - 1; i >= n && !r.Steps[i].Reversible {
		r.Steps[i].Summary += "; planned while NOSPACE is raised: the runtime compacts by it before it defragments"
	} else {
		r.Steps = r.Steps[:n] // a policy that keeps more fixes nothing
	}
	if quotaRaised(c, obs) {
		size := len(obs.Members)
		if size > 0 && obs.Members[size-1].Role == live.RoleRemoved {
			size--
		}
		cur, _ := spec.ParseRelease(obs.StatefulSet.Version, 3)
		from := len(r.Steps)
		etcdTemplate(r, c, obs, &etcdModel{name: c.Metadata.Name, size: size, version: cur, leader: -1}, images)
		while := "NOSPACE is raised on " + strings.Join(nospace, ", ")
		for i := from; i < len(r.Steps); i++ {
			// Below 3 members a restart stops the cluster, as the step
			// says: it needs the quorum there is, not one without it.
			restarted := ""
			if size >= 3 {
				restarted = r.Steps[i].Params.RestartMember.Member
			}
			relieve(&r.Steps[i], while, "the raised space quota lets the runtime disarm the alarm, and etcd answers /health false on every member until it does",
				quorumGate(plan.Before, restarted), quorumGate(plan.After, ""))
		}
	}
	if len(r.Steps) > n {
		if s, ok := expandStep(c, obs); ok {
			relieve(&s, "NOSPACE is raised on "+strings.Join(nospace, ", "), "growing volumes restarts nothing")
			r.add(s)
		}
		return true
	}
	r.wait(gate(plan.GateClusterHealthy, plan.Before, fmt.Sprintf(
		"etcd raised NOSPACE on %s: the cluster takes no writes. The runtime compacts by spec.compaction, defragments the members one at a time and disarms the alarm once every member's database is below %d%% of the space quota (%s); if the data itself needs more room, raise spec.spaceQuota, which is planned while the alarm is raised. Member restarts and upgrades wait",
		strings.Join(nospace, ", "), contract.EtcdDisarmBelowPercent, bytesText(renderedQuota(obs)))))
	return true
}

// quotaRaised: the spec raises the rendered quota, or a rolling restart
// under way brings a raised one to members that still run less.
func quotaRaised(c *spec.EtcdCluster, obs *live.Cluster) bool {
	rendered := renderedQuota(obs)
	if c.Spec.QuotaBytes() > rendered {
		return true
	}
	if resumeRestart(obs, len(obs.Members)) == nil {
		return false
	}
	for _, m := range obs.Members {
		if m.SpaceQuota == 0 || m.SpaceQuota < rendered {
			return true // a member that says nothing may run the old quota
		}
	}
	return false
}

// quorate: more than half of the voters the runtime reports are healthy
// (a voter it cannot judge counts as one that is not).
func quorate(obs *live.Cluster) bool {
	healthy, voters := 0, 0
	for _, m := range obs.Members {
		if m.IsVoter() || m.Role == live.RoleUnknown {
			voters++
			if m.IsVoter() {
				healthy++
			}
		}
	}
	return voters > 0 && healthy > voters/2
}

// alarmed names the members etcd raised alarm on, sorted ("an unnamed
// member" for one the runtime could not name).
func alarmed(obs *live.Cluster, alarm string) []string {
	var out []string
	for _, a := range obs.Alarms {
		if a.Alarm == alarm {
			out = append(out, cmp.Or(a.Member, "an unnamed member"))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
