package etcd

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
)

// etcd maintenance keeps a cluster within its space quota. Each pass of
// the Membership keeper ends with one maintenance pass: look at every
// member's database (its Status call) and the alarms (AlarmList), decide
// at most one action (decideMaint, pure), take it, and report under
// contract.StatusKeyEtcdMaintenance, with Events and metrics.
//
// The actions, in order of precedence:
//
//   - compact to the revision the rendered policy allows (revision mode:
//     the newest revision minus the retention, once the store has moved
//     on by a tenth of the retention; periodic mode: the revision recorded
//     at least a retention ago);
//   - defragment one member: one whose file is at least half free pages
//     that add up to at least a tenth of the quota; one whose file is at
//     or above the disarm level (contract.EtcdDisarmBelowPercent of the
//     quota) with a tenth of the quota free, before etcd raises NOSPACE;
//     or, while NOSPACE is raised, one at or above the disarm level with
//     a twentieth of the quota free, or not defragmented since the last
//     compaction (etcd counts the pages a compaction freed only at its
//     next commit, and under NOSPACE there may be none). Only with every member healthy, one
//     member at a time (a defragmentation blocks the member's reads and
//     writes while it runs), followers first, the leader last: never the
//     leader while another member waits for one, nor, under NOSPACE,
//     while a follower is still at or above the disarm level;
//   - disarm NOSPACE once every member's file is below the disarm level.
//
// CORRUPT is never disarmed: the keeper reports it and does nothing else
// until a person has replaced the corrupt member and disarmed it.

// The thresholds of a defragmentation, in percent.
const (
	// defragFreeOfFile and defragFreeOfQuota: a member is fragmented when
	// at least this share of its file is free pages and they are at least
	// this share of the quota (about 200 MiB of a 2 GiB quota).
	defragFreeOfFile  = 50
	defragFreeOfQuota = 10
	// noSpaceFreeOfQuota: while NOSPACE is raised, a member at or above
	// the disarm level is defragmented once this share of the quota is
	// free; less would not bring it below.
	noSpaceFreeOfQuota = 5
)

// defragTimeout bounds one defragmentation. A defragmentation recorded as
// started less than this ago (by this replica before it restarted, or by
// another that led) is taken to be still running.
const defragTimeout = 5 * time.Minute

// maintView is what one maintenance pass sees: the input of decideMaint.
type maintView struct {
	Now     time.Time
	Members []spaceMember
	// Quota is the space quota of the rendered config, in bytes (etcd's
	// default when it sets none): the quota of a member that does not
	// report its own.
	Quota int64
	// Revision is the newest store revision a member reports.
	Revision int64
	// Policy is the compaction policy of the rendered config; zero when
	// it sets none, and nothing is compacted.
	Policy compactionPolicy
	// Prev is the last report.
	Prev contract.EtcdMaintenanceStatus
	// Alarms are the alarms raised; AlarmsListed is false when etcd did
	// not list them (then Alarms are the last report's).
	Alarms       []contract.EtcdAlarm
	AlarmsListed bool
	// Busy says why no member may be defragmented this pass (the
	// membership changed); empty when one may.
	Busy string
}

// spaceMember is one member's database as its Status call reports it.
type spaceMember struct {
	ID        uint64
	Name      string
	ClientURL string
	Leader    bool
	Learner   bool
	Healthy   bool
	// DBSize, InUse and Quota are in bytes; Quota is 0 when the member
	// does not report it (before etcd 3.6).
	DBSize, InUse, Quota int64
	// Defragmented is when the runtime last defragmented it, as the last
	// report says; zero when never.
	Defragmented time.Time
}

// compactionPolicy is the rendered compaction policy.
type compactionPolicy struct {
	Mode, Retention string
}

type maintKind int

const (
	maintNone maintKind = iota
	maintCompact
	maintDefrag
	maintDisarm
)

func (k maintKind) String() string {
	return [...]string{"none", "compact", "defrag", "disarm"}[k]
}

// maintAction is decideMaint's answer: at most one action per pass.
type maintAction struct {
	Kind maintKind
	// Revision is what to compact to (maintCompact).
	Revision int64
	// Member is the member to defragment, or whose alarm to disarm.
	Member spaceMember
	// Why says why, or, with maintNone, what the cluster waits for (empty
	// when nothing is to do).
	Why string
}

// decideMaint is the runtime's maintenance policy (pure).
func decideMaint(v maintView) maintAction {
	if !v.quorate() {
		return maintAction{Why: "no quorum: nothing is compacted, defragmented or disarmed"}
	}
	if !v.AlarmsListed {
		return maintAction{Why: "etcd does not list its alarms now: nothing is defragmented or disarmed until it does"}
	}
	if corrupt := v.raised(contract.EtcdAlarmCorrupt); len(corrupt) > 0 {
		return maintAction{Why: fmt.Sprintf("etcd raised CORRUPT on %s: cairn never disarms it and does no maintenance until a person has replaced the member and disarmed it (docs/etcd-recovery.md)", strings.Join(corrupt, ", "))}
	}
	if d := v.Prev.Defragmenting; d != nil {
		if at, err := time.Parse(time.RFC3339, d.Started); err == nil && v.Now.Sub(at) < defragTimeout {
			return maintAction{Why: fmt.Sprintf("%s is being defragmented since %s", d.Member, d.Started)}
		}
	}
	nospace := len(v.raised(contract.EtcdAlarmNoSpace)) > 0
	if rev, why := v.compaction(nospace); rev > 0 {
		return maintAction{Kind: maintCompact, Revision: rev, Why: why}
	}
	if a, ok := v.defrag(nospace); ok {
		return a
	}
	if nospace {
		return v.disarm()
	}
	return maintAction{}
}

// quorate: more than half of the voters are healthy.
func (v maintView) quorate() bool {
	healthy, voters := 0, 0
	for _, m := range v.Members {
		if !m.Learner {
			voters++
			if m.Healthy {
				healthy++
			}
		}
	}
	return voters > 0 && healthy > voters/2
}

// raised names the members alarm is raised on, sorted.
func (v maintView) raised(alarm string) []string {
	var out []string
	for _, a := range v.Alarms {
		if a.Alarm == alarm {
			out = append(out, cmp.Or(a.Member, a.ID))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// quotaOf is the quota member m runs with: its own when it reports it.
func (v maintView) quotaOf(m spaceMember) int64 {
	if m.Quota > 0 {
		return m.Quota
	}
	return v.Quota
}

// compaction is the revision to compact to now, and why; 0 when none.
func (v maintView) compaction(nospace bool) (int64, string) {
	last := v.Prev.Compaction.Revision
	switch v.Policy.Mode {
	case contract.EtcdCompactionRevision:
		keep, err := spec.CompactionRetention(v.Policy.Retention).Revisions()
		if err != nil {
			return 0, ""
		}
		target := v.Revision - keep
		if target <= last || !nospace && target-last < max(1, keep/10) {
			return 0, ""
		}
		return target, fmt.Sprintf("compacted to revision %d, keeping the last %d revisions", target, keep)
	case contract.EtcdCompactionPeriodic:
		period, err := spec.CompactionRetention(v.Policy.Retention).Period()
		if err != nil {
			return 0, ""
		}
		s, ok := sampleBefore(v.Prev.Compaction.Samples, v.Now.Add(-period))
		if !ok || s.Revision <= last {
			return 0, ""
		}
		return s.Revision, fmt.Sprintf("compacted to revision %d, the revision of %s, keeping %s of history", s.Revision, s.At, v.Policy.Retention)
	}
	return 0, ""
}

// sampleBefore is the newest sample taken at or before t.
func sampleBefore(samples []contract.EtcdRevisionSample, t time.Time) (contract.EtcdRevisionSample, bool) {
	var out contract.EtcdRevisionSample
	found := false
	for _, s := range samples {
		if at, err := time.Parse(time.RFC3339, s.At); err == nil && !at.After(t) {
			out, found = s, true
		}
	}
	return out, found
}

// needsDefrag reports whether member m is to be defragmented.
func (v maintView) needsDefrag(m spaceMember, nospace bool) bool {
	free, quota := m.DBSize-m.InUse, v.quotaOf(m)
	if quota <= 0 {
		return false
	}
	high := m.DBSize*100 >= contract.EtcdDisarmBelowPercent*quota
	switch {
	case nospace && high && v.notSinceCompaction(m):
		// Once after each compaction whatever its free pages: etcd
		// counts the pages a compaction freed at its next commit, and
		// under NOSPACE there may be none.
		return true
	case nospace && high && free*100 >= noSpaceFreeOfQuota*quota:
		return true
	case high && free*100 >= defragFreeOfQuota*quota:
		return true // before etcd raises NOSPACE
	}
	return free*100 >= defragFreeOfFile*m.DBSize && free*100 >= defragFreeOfQuota*quota
}

// notSinceCompaction: the runtime compacted, and has not defragmented m
// since.
func (v maintView) notSinceCompaction(m spaceMember) bool {
	at, err := time.Parse(time.RFC3339, v.Prev.Compaction.At)
	return err == nil && m.Defragmented.Before(at)
}

// defrag picks the member to defragment: with every member healthy, the
// follower (or learner) with the most free pages, the leader only once no
// other member needs one. ok is false when no member needs one.
func (v maintView) defrag(nospace bool) (maintAction, bool) {
	var pending []spaceMember
	for _, m := range v.Members {
		if m.Healthy && v.needsDefrag(m, nospace) {
			pending = append(pending, m)
		}
	}
	if len(pending) == 0 {
		return maintAction{}, false
	}
	names := make([]string, len(pending))
	for i, m := range pending {
		names[i] = m.Name
	}
	if v.Busy != "" {
		return maintAction{Why: fmt.Sprintf("%s wait for a defragmentation: %s", strings.Join(names, ", "), v.Busy)}, true
	}
	for _, m := range v.Members {
		if !m.Healthy {
			return maintAction{Why: fmt.Sprintf("%s wait for a defragmentation until %s is healthy: a defragmentation blocks its member while it runs", strings.Join(names, ", "), cmp.Or(m.Name, strconv.FormatUint(m.ID, 16)))}, true
		}
	}
	if i := slices.IndexFunc(pending, func(m spaceMember) bool { return !m.Leader }); i < 0 && nospace {
		// Only the leader is ready for one: a follower still above the
		// disarm level goes first once its free pages show (etcd
		// reports a compaction's freed pages after its next commit).
		for _, m := range v.Members {
			if !m.Leader && m.DBSize*100 >= contract.EtcdDisarmBelowPercent*v.quotaOf(m) {
				return maintAction{Why: fmt.Sprintf("%s waits for a defragmentation: it leads, and %s, at %s of its file, goes first", pending[0].Name, m.Name, bytesText(m.DBSize))}, true
			}
		}
	}
	slices.SortFunc(pending, func(a, b spaceMember) int {
		if a.Leader != b.Leader {
			if a.Leader {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(b.DBSize-b.InUse, a.DBSize-a.InUse), strings.Compare(a.Name, b.Name))
	})
	m := pending[0]
	why := fmt.Sprintf("%s of its %s file are free pages", bytesText(m.DBSize-m.InUse), bytesText(m.DBSize))
	if nospace {
		why += "; NOSPACE is raised"
		if v.notSinceCompaction(m) {
			why += " and it was not defragmented since the last compaction"
		}
	}
	if m.Leader {
		why += "; it leads, and no other member needs one"
	}
	return maintAction{Kind: maintDefrag, Member: m, Why: why}, true
}

// disarm disarms NOSPACE on one member once every member's file is
// below the disarm level; otherwise it says what is in the way.
func (v maintView) disarm() maintAction {
	for _, m := range v.Members {
		switch q := v.quotaOf(m); {
		case !m.Healthy:
			return maintAction{Why: fmt.Sprintf("NOSPACE stays raised until %s is healthy and its database is seen below %d%% of the quota", cmp.Or(m.Name, strconv.FormatUint(m.ID, 16)), contract.EtcdDisarmBelowPercent)}
		case m.DBSize*100 >= contract.EtcdDisarmBelowPercent*q:
			return maintAction{Why: fmt.Sprintf("NOSPACE stays raised: %s's database is %s of its %s quota (%s in use), not below %d%%; if compaction and defragmentation do not bring it below, the data needs more room: raise spec.spaceQuota or delete keys",
				m.Name, bytesText(m.DBSize), bytesText(q), bytesText(m.InUse), contract.EtcdDisarmBelowPercent)}
		}
	}
	for _, a := range v.Alarms {
		if a.Alarm != contract.EtcdAlarmNoSpace {
			continue
		}
		id, err := strconv.ParseUint(a.ID, 16, 64)
		if err != nil {
			continue
		}
		m := spaceMember{ID: id, Name: a.Member}
		return maintAction{Kind: maintDisarm, Member: m, Why: fmt.Sprintf("every member's database is below %d%% of its quota", contract.EtcdDisarmBelowPercent)}
	}
	return maintAction{}
}

// bytesText is a byte count for people: 8Mi, 620Ki, 1000.
func bytesText(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }
