package etcd

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// maintResult is what taking a maintAction came to.
type maintResult struct {
	// Done: the action took effect (a compaction etcd had already gone
	// past counts).
	Done bool
	Err  error
	// Started and Ended bound a defragmentation; Freed is how much its
	// member's file shrank, as the member reports after it.
	Started, Ended time.Time
	Freed          int64
}

// listedAlarms are the alarms etcd lists, by member name where the look
// knows it, each with when it was first seen (the last report's, or now).
func listedAlarms(prev []contract.EtcdAlarm, listed []*etcdserverpb.AlarmMember, names map[uint64]string, now time.Time) []contract.EtcdAlarm {
	var out []contract.EtcdAlarm
	for _, l := range listed {
		if l == nil || l.Alarm == etcdserverpb.AlarmType_NONE {
			continue
		}
		a := contract.EtcdAlarm{Member: names[l.MemberID], ID: strconv.FormatUint(l.MemberID, 16), Alarm: l.Alarm.String(), Since: now.UTC().Format(time.RFC3339)}
		if i := slices.IndexFunc(prev, func(p contract.EtcdAlarm) bool { return p.ID == a.ID && p.Alarm == a.Alarm }); i >= 0 {
			a.Since = prev[i].Since
			a.Member = cmp.Or(a.Member, prev[i].Member)
		}
		out = append(out, a)
	}
	sortAlarms(out)
	return out
}

func sortAlarms(as []contract.EtcdAlarm) {
	slices.SortFunc(as, func(a, b contract.EtcdAlarm) int {
		return cmp.Or(strings.Compare(a.Member, b.Member), strings.Compare(a.ID, b.ID), strings.Compare(a.Alarm, b.Alarm))
	})
}

// nextMaint is the report after a maintenance pass (pure): the members'
// databases as looked at, the alarms (less one the pass disarmed), the
// compaction the runtime runs (with a revision sample every tenth of a
// periodic retention), the defragmentation that ended, and a message.
func nextMaint(v maintView, a maintAction, r maintResult) contract.EtcdMaintenanceStatus {
	now := v.Now.UTC().Format(time.RFC3339)
	st := contract.EtcdMaintenanceStatus{ObservedAt: now, LastDefrag: v.Prev.LastDefrag, Message: a.Why}
	for _, m := range v.Members {
		s := contract.EtcdMemberSpace{Name: m.Name, ID: strconv.FormatUint(m.ID, 16), DBSize: m.DBSize, DBSizeInUse: m.InUse, Quota: m.Quota}
		if !m.Defragmented.IsZero() {
			s.Defragmented = m.Defragmented.UTC().Format(time.RFC3339)
		}
		if a.Kind == maintDefrag && r.Done && m.ID == a.Member.ID {
			s.Defragmented = r.Ended.UTC().Format(time.RFC3339)
		}
		st.Members = append(st.Members, s)
	}
	st.Alarms = slices.Clone(v.Alarms)
	if a.Kind == maintDisarm && r.Done {
		id := strconv.FormatUint(a.Member.ID, 16)
		st.Alarms = slices.DeleteFunc(st.Alarms, func(x contract.EtcdAlarm) bool { return x.ID == id && x.Alarm == contract.EtcdAlarmNoSpace })
	}
	st.Compaction = nextCompaction(v, a, r, now)
	if d := v.Prev.Defragmenting; d != nil && a.Kind == maintNone {
		if at, err := time.Parse(time.RFC3339, d.Started); err == nil && v.Now.Sub(at) < defragTimeout {
			st.Defragmenting = d // another replica's, still running
		}
	}
	if a.Kind == maintDefrag && !r.Started.IsZero() {
		d := &contract.EtcdDefrag{Member: a.Member.Name, Started: r.Started.UTC().Format(time.RFC3339), Ended: r.Ended.UTC().Format(time.RFC3339), Freed: r.Freed}
		if r.Err != nil {
			d.Error = r.Err.Error()
		}
		st.LastDefrag = d
	}
	switch {
	case r.Err != nil:
		st.Message = fmt.Sprintf("%s %s failed: %v", a.Kind, cmp.Or(a.Member.Name, "the cluster"), r.Err)
	case a.Kind == maintDefrag:
		st.Message = fmt.Sprintf("defragmented %s: %s", a.Member.Name, a.Why)
	case a.Kind == maintDisarm:
		st.Message = fmt.Sprintf("disarmed NOSPACE on %s: %s", cmp.Or(a.Member.Name, strconv.FormatUint(a.Member.ID, 16)), a.Why)
	}
	return st
}

// nextCompaction is the compaction state after a pass.
func nextCompaction(v maintView, a maintAction, r maintResult, now string) contract.EtcdCompactionState {
	c := v.Prev.Compaction
	c.Mode, c.Retention = v.Policy.Mode, v.Policy.Retention
	if a.Kind == maintCompact && r.Done {
		c.Revision, c.At = a.Revision, now
	}
	if c.Mode != contract.EtcdCompactionPeriodic {
		c.Samples = nil
		return c
	}
	period, err := spec.CompactionRetention(v.Policy.Retention).Period()
	if err != nil || v.Revision == 0 {
		return c
	}
	c.Samples = slices.Clone(c.Samples)
	last := time.Time{}
	if n := len(c.Samples); n > 0 {
		last, _ = time.Parse(time.RFC3339, c.Samples[n-1].At)
	}
	if v.Now.Sub(last) >= period/10 {
		c.Samples = append(c.Samples, contract.EtcdRevisionSample{At: now, Revision: v.Revision})
	}
	// Keep the newest sample a retention old (the next compaction's) and
	// those after it.
	if s, ok := sampleBefore(c.Samples, v.Now.Add(-period)); ok {
		i := slices.Index(c.Samples, s)
		c.Samples = c.Samples[i:]
	}
	return c
}

// maintEvents are the Events of a pass (pure): each alarm raised and each
// alarm cleared, once, and the defragmentation made.
func maintEvents(prev, next contract.EtcdMaintenanceStatus, a maintAction, r maintResult) []agent.Event {
	var out []agent.Event
	key := func(x contract.EtcdAlarm) string { return x.ID + "/" + x.Alarm }
	has := func(list []contract.EtcdAlarm, x contract.EtcdAlarm) bool {
		return slices.ContainsFunc(list, func(y contract.EtcdAlarm) bool { return key(x) == key(y) })
	}
	for _, x := range next.Alarms {
		if !has(prev.Alarms, x) {
			out = append(out, agent.Event{Type: corev1.EventTypeWarning, Reason: contract.ReasonEtcdAlarmRaised, Message: raisedText(x)})
		}
	}
	for _, x := range prev.Alarms {
		if has(next.Alarms, x) {
			continue
		}
		msg := fmt.Sprintf("%s on %s is no longer raised (disarmed outside cairn)", x.Alarm, alarmWho(x))
		if a.Kind == maintDisarm && r.Done && strconv.FormatUint(a.Member.ID, 16) == x.ID && x.Alarm == contract.EtcdAlarmNoSpace {
			msg = fmt.Sprintf("disarmed NOSPACE on %s, raised since %s: %s", alarmWho(x), x.Since, a.Why)
		}
		out = append(out, agent.Event{Type: corev1.EventTypeNormal, Reason: contract.ReasonEtcdAlarmCleared, Message: msg})
	}
	if a.Kind == maintDefrag && !r.Started.IsZero() {
		if r.Err != nil {
			out = append(out, agent.Event{Type: corev1.EventTypeWarning, Reason: contract.ReasonEtcdDefragmented, Message: fmt.Sprintf("defragmenting %s failed: %v", a.Member.Name, r.Err)})
		} else {
			out = append(out, agent.Event{Type: corev1.EventTypeNormal, Reason: contract.ReasonEtcdDefragmented, Message: fmt.Sprintf("defragmented %s in %s: its file shrank by %s (%s)",
				a.Member.Name, r.Ended.Sub(r.Started).Round(time.Millisecond), bytesText(r.Freed), a.Why)})
		}
	}
	return out
}

func alarmWho(x contract.EtcdAlarm) string { return cmp.Or(x.Member, "member "+x.ID) }

// raisedText says an alarm raised, and what happens next.
func raisedText(x contract.EtcdAlarm) string {
	switch x.Alarm {
	case contract.EtcdAlarmNoSpace:
		return fmt.Sprintf("etcd raised NOSPACE on %s: its database reached the space quota and the cluster takes no writes; the runtime compacts, defragments the members one at a time and disarms it once every member's database is below %d%% of its quota (if the data needs more room, raise spec.spaceQuota)",
			alarmWho(x), contract.EtcdDisarmBelowPercent)
	case contract.EtcdAlarmCorrupt:
		return fmt.Sprintf("etcd raised CORRUPT on %s: its data disagrees with the other members' at the same revision. cairn never disarms it: take a snapshot from a healthy member, replace %s (delete its volume claim and pod; it rejoins with a copy of a healthy member's data), check that etcdctl endpoint hashkv --cluster agrees, then run etcdctl alarm disarm (docs/etcd-recovery.md)",
			alarmWho(x), alarmWho(x))
	}
	return fmt.Sprintf("etcd raised %s on %s", x.Alarm, alarmWho(x))
}

// sameMaint compares two reports but for when they were taken.
func sameMaint(a, b contract.EtcdMaintenanceStatus) bool {
	strip := func(s contract.EtcdMaintenanceStatus) string {
		s.ObservedAt = ""
		out, _ := json.Marshal(s)
		return string(out)
	}
	return strip(a) == strip(b)
}

// steadySizes keeps the last report's size of each member whose database
// moved by less than a twentieth (and less than 1 MiB at small sizes)
// since: sizes move with every write, and a report that moved with them
// would change the observed state, and every open pull request's body
// that names it, at each heartbeat. A defragmentation, a compaction's
// freed pages or a filling database show at once.
func steadySizes(prev, next contract.EtcdMaintenanceStatus) contract.EtcdMaintenanceStatus {
	near := func(a, b int64) bool {
		d := a - b
		if d < 0 {
			d = -d
		}
		return d*20 < max(a, 1<<20)
	}
	next.Members = slices.Clone(next.Members)
	for i, m := range next.Members {
		j := slices.IndexFunc(prev.Members, func(p contract.EtcdMemberSpace) bool { return p.ID == m.ID })
		if j >= 0 && near(prev.Members[j].DBSize, m.DBSize) && near(prev.Members[j].DBSizeInUse, m.DBSizeInUse) {
			next.Members[i].DBSize, next.Members[i].DBSizeInUse = prev.Members[j].DBSize, prev.Members[j].DBSizeInUse
		}
	}
	return next
}
