package gates

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
)

// Result is one gate's state.
type Result struct {
	Gate plan.Gate
	Pass bool
	// Reason says what is missing when it does not pass.
	Reason string
}

// Judge evaluates gates, judging the health of the kinds it knows the
// roles of; cmd/cairn builds it from its table of kinds (For).
type Judge struct {
	roles func(kind string) (live.KindRoles, bool)
}

// For returns the judge of the given kinds.
func For(kinds live.Kinds) Judge { return Judge{roles: kinds.RolesOf} }

// shipped judges the kinds cairn ships, for After, Before and Evaluate.
var shipped = Judge{roles: live.RolesOf}

// After evaluates every "after" gate of a step, for the kinds cairn
// ships (see Judge.After).
func After(s plan.Step, c spec.Cluster, obs *live.Cluster, now time.Time) []Result {
	return shipped.After(s, c, obs, now)
}

// Before evaluates every "before" gate of a step, for the kinds cairn
// ships (see Judge.Before).
func Before(s plan.Step, c spec.Cluster, obs *live.Cluster, now time.Time) []Result {
	return shipped.Before(s, c, obs, now)
}

// Evaluate checks one gate, for the kinds cairn ships (see
// Judge.Evaluate).
func Evaluate(g plan.Gate, c spec.Cluster, obs *live.Cluster, now time.Time) Result {
	return shipped.Evaluate(g, c, obs, now)
}

// After evaluates every "after" gate of a step. A backup step's gate is
// checked against the policy that step set, not today's spec.
func (j Judge) After(s plan.Step, c spec.Cluster, obs *live.Cluster, now time.Time) []Result {
	var out []Result
	for _, g := range s.Gates {
		if g.When != plan.After {
			continue
		}
		if g.Kind == plan.GateBackupConfigured && s.Params.ConfigureBackup != nil {
			r := Result{Gate: g}
			r.Pass, r.Reason = backupIs(s.Params.ConfigureBackup.To, obs)
			if r.Pass {
				r.Reason = ""
			}
			out = append(out, r)
			continue
		}
		if g.Kind == plan.GateCompactionApplied && s.Params.EtcdConfigureCompaction != nil && obs != nil {
			r := Result{Gate: g}
			r.Pass, r.Reason = compactionApplied(&s.Params.EtcdConfigureCompaction.To, c, obs)
			out = append(out, r)
			continue
		}
		out = append(out, j.Evaluate(g, c, obs, now))
	}
	return out
}

// Before evaluates every "before" gate of a step: whether it may start
// now. cairn merges a step's pull request itself only when they pass.
func (j Judge) Before(s plan.Step, c spec.Cluster, obs *live.Cluster, now time.Time) []Result {
	var out []Result
	for _, g := range s.Gates {
		if g.When == plan.Before {
			out = append(out, j.Evaluate(g, c, obs, now))
		}
	}
	return out
}

// Pass reports whether all results pass, and the first reason if not.
func Pass(results []Result) (bool, string) {
	for _, r := range results {
		if !r.Pass {
			return false, fmt.Sprintf("%s: %s", r.Gate.Description, r.Reason)
		}
	}
	return true, ""
}

// Evaluate checks one gate. A condition the observed state does not
// show (obs is nil, a field is not observed) does not pass.
func (j Judge) Evaluate(g plan.Gate, c spec.Cluster, obs *live.Cluster, now time.Time) Result {
	r := Result{Gate: g}
	if obs == nil {
		r.Reason = "the cluster is not observed"
		return r
	}
	r.Pass, r.Reason = j.check(g, c, obs, now)
	if r.Pass {
		r.Reason = ""
	}
	return r
}

func (j Judge) check(g plan.Gate, c spec.Cluster, obs *live.Cluster, now time.Time) (bool, string) {
	m := member(obs, g.Member)
	switch g.Kind {
	case plan.GateClusterHealthy:
		return j.healthy(obs, g.Below)
	case plan.GateStatefulSetSettled:
		return settled(obs)
	case plan.GateMemberReady:
		return m != nil && m.Ready, fmt.Sprintf("%s is not ready", g.Member)
	case plan.GateMemberVersion:
		return m != nil && m.Version == g.Version, fmt.Sprintf("%s does not run %s", g.Member, g.Version)
	case plan.GateMemberVoter:
		return m != nil && m.IsVoter() && m.Ready, fmt.Sprintf("%s is not a voting member", g.Member)
	case plan.GateMemberRemoved:
		return m == nil || m.Role == live.RoleRemoved, fmt.Sprintf("%s is still a member", g.Member)
	case plan.GateNotLeader:
		return m == nil || m.Role != live.RoleLeader, fmt.Sprintf("%s still leads", g.Member)
	case plan.GatePrimary:
		return m != nil && m.Ready && m.Role == live.RolePrimary, fmt.Sprintf("%s is not the primary", g.Member)
	case plan.GateReplicaStreaming:
		// The observed state says replica and ready: the runtime labels a
		// member replica once it answers in recovery. The runtime itself
		// starts a switchover only once the target streams, and records
		// it done (switchoverDone) when the target is labelled primary,
		// which is what GatePrimary, the step's after-gate, reads.
		return m != nil && m.Ready && m.Role == live.RoleReplica, fmt.Sprintf("%s is not a streaming replica", g.Member)
	case plan.GateClusterVersion:
		return obs.ClusterVersion == g.Version, fmt.Sprintf("etcd reports cluster version %q", obs.ClusterVersion)
	case plan.GateStorageCapacity:
		capacity := cmp.Or(obs.Capacity, obs.Storage)
		return capacity != "" && spec.Quantity(capacity).Cmp(spec.Quantity(g.Quantity)) >= 0, fmt.Sprintf("volumes report %q", capacity)
	case plan.GateBackupFresh:
		return backupFresh(obs, g, now)
	case plan.GateBackupConfigured:
		return backupConfigured(c, obs)
	case plan.GateUpgradeChecked:
		return upgradeChecked(obs, g.Version)
	case plan.GateUpgradeCheckRemoved:
		return obs.UpgradeCheck == nil, "the pre-flight check Job is still there"
	case plan.GateMaintenanceWindow:
		return windowOpen(c, now)
	case plan.GateBackupEndsInWindow:
		return backupEndsInWindow(c, obs, now)
	case plan.GateMemberRestarted:
		return m != nil && m.Ready && m.TemplateRevision == g.Revision, fmt.Sprintf("%s has not restarted with template revision %s", g.Member, g.Revision)
	case plan.GateConfigApplied:
		return configApplied(obs, g)
	case plan.GateTLSServed:
		return tlsServed(obs)
	case plan.GateMemberPeerTLS:
		return m != nil && m.PeerTLS, fmt.Sprintf("%s still advertises a plain HTTP peer URL", g.Member)
	case plan.GateCompactionApplied:
		return compactionApplied(nil, c, obs)
	case plan.GateQuorum:
		return quorum(obs, g.Member)
	case plan.GateMemberRejoined:
		return m != nil && m.TemplateRevision == g.Revision && rejoined(*m), fmt.Sprintf("%s has not rejoined with template revision %s", g.Member, g.Revision)
	case plan.GateQuorumLost:
		return obs.QuorumLost != nil, "the cluster has quorum"
	case plan.GateEtcdDowngrade:
		return etcdDowngrade(obs, g.Version)
	case plan.GateRecoveryStarted:
		switch obs.RecoverRefused {
		case g.Revision:
			return false, "the runtime refused it: quorum had come back"
		}
		return obs.RecoverDone == g.Revision, fmt.Sprintf("the runtime has not restarted the members for %s", g.Revision)
	}
	return false, fmt.Sprintf("cairn cannot check %s gates against the observed state", g.Kind)
}

// configApplied checks that the gate's member, or every member, runs
// config revision g.Revision with no parameter pending a restart.
func configApplied(obs *live.Cluster, g plan.Gate) (bool, string) {
	if len(obs.Members) == 0 {
		return false, "no member is observed"
	}
	for _, m := range obs.Members {
		if g.Member != "" && m.Name != g.Member {
			continue
		}
		switch {
		case m.ConfigRevision != g.Revision:
			return false, fmt.Sprintf("%s runs config revision %q", m.Name, m.ConfigRevision)
		case len(m.PendingRestart) > 0:
			return false, fmt.Sprintf("%s waits for a restart to apply %s", m.Name, strings.Join(m.PendingRestart, ", "))
		}
		if g.Member != "" {
			return true, ""
		}
	}
	return g.Member == "", fmt.Sprintf("%s is not observed", g.Member)
}

// quorum: more than half of the voters answer in their role, ready or
// not, without counting member (the one a step restarts) when it is set.
// A member whose role the runtime cannot tell, or whose data was lost,
// counts as a voter that does not answer.
func quorum(obs *live.Cluster, member string) (bool, string) {
	answering, voters := 0, 0
	for _, m := range obs.Members {
		if m.IsVoter() || m.Role == live.RoleUnknown || m.DataLost {
			voters++
			if m.IsVoter() && !m.DataLost && m.Name != member {
				answering++
			}
		}
	}
	switch {
	case voters == 0:
		return false, "no voting member is observed"
	case member != "":
		return answering > voters/2, fmt.Sprintf("%d of %d voters answer besides %s", answering, voters, member)
	}
	return answering > voters/2, fmt.Sprintf("%d of %d voters answer", answering, voters)
}

// rejoined: the member answers in a role that serves (an etcd voter, a
// PostgreSQL primary or replica) with its data.
func rejoined(m live.Member) bool {
	switch m.Role {
	case live.RoleLeader, live.RoleFollower, live.RolePrimary, live.RoleReplica:
		return !m.DataLost
	}
	return false
}

// tlsServed checks that every member served TLS with the cluster's
// certificate when the runtime last checked.
func tlsServed(obs *live.Cluster) (bool, string) {
	if len(obs.Members) == 0 {
		return false, "no member is observed"
	}
	for _, m := range obs.Members {
		if !m.TLS {
			return false, fmt.Sprintf("%s has not served TLS with the cluster's certificate", m.Name)
		}
	}
	return true, ""
}

func member(obs *live.Cluster, name string) *live.Member {
	for i := range obs.Members {
		if obs.Members[i].Name == name {
			return &obs.Members[i]
		}
	}
	return nil
}

func settled(obs *live.Cluster) (bool, string) {
	if len(obs.Members) != obs.StatefulSet.Replicas {
		return false, fmt.Sprintf("%d pods for %d replicas", len(obs.Members), obs.StatefulSet.Replicas)
	}
	for _, m := range obs.Members {
		if !m.Ready {
			return false, m.Name + " is not ready"
		}
	}
	return true, ""
}

// healthy: every member ready, one leading, none a learner, unknown,
// removed or without its data. With below > 0 only the members at lower
// ordinals are judged (a step removes those above), though the one
// leading may be among those above: the removal moves leadership first.
func (j Judge) healthy(obs *live.Cluster, below int) (bool, string) {
	kind, ok := j.roles(obs.Kind)
	if !ok {
		// Fail closed: a kind cairn cannot judge is never healthy.
		return false, fmt.Sprintf("cairn cannot judge the health of a %s", obs.Kind)
	}
	if below <= 0 {
		if ok, why := settled(obs); !ok {
			return false, why
		}
	} else if n := len(obs.Members); n < below || obs.Members[below-1].Ordinal() != below-1 {
		return false, fmt.Sprintf("the members below ordinal %d do not all have pods", below)
	}
	leading := 0
	for _, m := range obs.Members {
		if m.Role == kind.Leading {
			leading++
		}
		if below > 0 && m.Ordinal() >= below {
			continue
		}
		if !m.Ready {
			return false, m.Name + " is not ready"
		}
		switch m.Role {
		case live.RoleLearner, live.RoleUnknown, live.RoleRemoved:
			return false, fmt.Sprintf("%s is %s", m.Name, m.Role)
		}
		if m.DataLost {
			return false, m.Name + " lost its data"
		}
	}
	if leading != 1 {
		return false, fmt.Sprintf("%d %s", leading, plural(kind.Leading))
	}
	return true, ""
}

// windowOpen checks the spec's maintenance window at now, as the
// maintenance-window policy decides it; a spec without one is always open.
func windowOpen(c spec.Cluster, now time.Time) (bool, string) {
	mw := c.Common().MaintenanceWindow
	if mw == nil {
		return true, ""
	}
	open, _, next, err := policies.WindowAt(mw, now)
	switch {
	case err != nil:
		return false, "the maintenance window cannot be read: " + err.Error()
	case !open:
		return false, "it opens at " + next.Format("2006-01-02 15:04 MST")
	}
	return true, ""
}

// BackupLead is how long ahead of the time it must end a backup starts
// when it last took took: took, plus a quarter of it for a slower run (at
// most an hour, so that a backup that runs as long as the last one ends
// at most 70 minutes before it is needed, well inside the freshness a
// step gates on), plus ten minutes for the request to be merged and
// synced. Zero when nothing was measured.
func BackupLead(took time.Duration) time.Duration {
	if took <= 0 {
		return 0
	}
	return took + min(took/4, time.Hour) + 10*time.Minute
}

// lastBackupTook is how long the newest complete backup ran, 0 when the
// status does not say.
func lastBackupTook(b *live.Backup) time.Duration {
	if b == nil {
		return 0
	}
	started, ended := b.LastStarted.Time(), b.LastSuccessful.Time()
	if started.IsZero() || ended.IsZero() {
		return 0
	}
	return max(ended.Sub(started), 0)
}

// backupEndsInWindow checks that a backup started now ends inside the
// maintenance window, given how long the last one took: a backup a step
// held for the window relies on starts that far ahead of the window, so
// that it is fresh when the window opens, and a backup longer than the
// window is not taken in one window and stale by the next. With no
// window it always passes; with no backup measured, the window must be
// open now.
func backupEndsInWindow(c spec.Cluster, obs *live.Cluster, now time.Time) (bool, string) {
	mw := c.Common().MaintenanceWindow
	if mw == nil {
		return true, ""
	}
	took := lastBackupTook(obs.Backup)
	lead := BackupLead(took)
	if lead == 0 {
		return windowOpen(c, now)
	}
	open, _, next, err := policies.WindowAt(mw, now.Add(lead))
	switch {
	case err != nil:
		return false, "the maintenance window cannot be read: " + err.Error()
	case open:
		return true, ""
	}
	// Minutes only: the reason is shown in the step's status, which must
	// not change as a backup's length moves by seconds.
	return false, fmt.Sprintf("the last backup took %s, so the next one starts at %s, ahead of the window that opens at %s",
		took.Round(time.Minute), next.Add(-lead).Format("2006-01-02 15:04 MST"), next.Format("2006-01-02 15:04 MST"))
}

func backupFresh(obs *live.Cluster, g plan.Gate, now time.Time) (bool, string) {
	if obs.Backup == nil || obs.Backup.LastSuccessful == "" {
		return false, "no successful backup is observed"
	}
	maxAge, err := spec.Duration(g.MaxAge).Parse()
	if err != nil {
		return false, fmt.Sprintf("max age %q: %v", g.MaxAge, err)
	}
	// No age in the reason: it is shown in the step's pull request and
	// its status, which must not change as the clock moves.
	last := obs.Backup.LastSuccessful
	return now.Sub(last.Time()) <= maxAge, fmt.Sprintf("the last backup, taken at %s, is older than %s", last, g.MaxAge)
}

func backupConfigured(c spec.Cluster, obs *live.Cluster) (bool, string) {
	want := c.Common().Backup
	have := obs.Backup
	switch {
	case want == nil:
		return have == nil || have.Schedule == "", "the runtime still runs backups"
	case have == nil:
		return false, "the runtime runs no backups"
	}
	tz := have.TimeZone
	if tz == "" {
		tz = spec.DefaultTimeZone
	}
	ok := have.Schedule == string(want.Schedule) && have.StorageLocation == string(want.StorageLocation) && tz == want.TimeZone
	return ok, fmt.Sprintf("the runtime runs %q to %s", have.Schedule, have.StorageLocation)
}

// backupIs compares the observed backup policy with the one a step set.
func backupIs(want *plan.BackupSettings, obs *live.Cluster) (bool, string) {
	if obs == nil {
		return false, "the cluster is not observed"
	}
	have := obs.Backup
	if want == nil {
		return have == nil || have.Schedule == "", "the runtime still runs backups"
	}
	if have == nil {
		return false, "the runtime runs no backups"
	}
	tz := have.TimeZone
	if tz == "" {
		tz = spec.DefaultTimeZone
	}
	ok := have.Schedule == want.Schedule && have.StorageLocation == want.StorageLocation && tz == want.TimeZone
	return ok, fmt.Sprintf("the runtime runs %q to %s", have.Schedule, have.StorageLocation)
}

// plural is the plural of a role's name, as the gate's reason says it.
func plural(r live.Role) string {
	if r == live.RolePrimary {
		return "primaries"
	}
	return string(r) + "s"
}
