package etcd

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairn-dev/cairn/planner/contract"
)

var maintNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const mib = 1 << 20

// space is a healthy voter with a database of size bytes, inUse of them
// in use.
func space(id uint64, name string, leader bool, size, inUse int64) spaceMember {
	return spaceMember{ID: id, Name: name, ClientURL: "http://" + name, Leader: leader, Healthy: true, DBSize: size, InUse: inUse}
}

// clusterView is three healthy members under a 100 MiB quota, e-0
// leading, none fragmented, compacting the last 1000 revisions, at
// revision 5000 and compacted to 4500.
func clusterView(edit ...func(v *maintView)) maintView {
	v := maintView{Now: maintNow, Quota: 100 * mib, Revision: 5000, AlarmsListed: true,
		Policy:  compactionPolicy{Mode: contract.EtcdCompactionRevision, Retention: "1000"},
		Members: []spaceMember{space(1, "e-0", true, 10*mib, 9*mib), space(2, "e-1", false, 10*mib, 9*mib), space(3, "e-2", false, 10*mib, 9*mib)}}
	v.Prev.Compaction.Revision = 4000
	for _, e := range edit {
		e(&v)
	}
	return v
}

func nospace(ids ...string) func(v *maintView) {
	return func(v *maintView) {
		for _, id := range ids {
			name := map[string]string{"1": "e-0", "2": "e-1", "3": "e-2"}[id]
			v.Alarms = append(v.Alarms, contract.EtcdAlarm{Member: name, ID: id, Alarm: contract.EtcdAlarmNoSpace, Since: "2026-11-30T11:59:00Z"})
		}
	}
}

func sized(i int, size, inUse int64) func(v *maintView) {
	return func(v *maintView) { v.Members[i].DBSize, v.Members[i].InUse = size, inUse }
}

func TestDecideMaint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		view   maintView
		kind   maintKind
		member string // the member acted on
		rev    int64  // the revision compacted to
		why    string // a substring of Why
	}{
		{name: "nothing to do", view: clusterView()},
		{name: "no quorum: nothing", view: clusterView(func(v *maintView) { v.Members[1].Healthy, v.Members[2].Healthy = false, false }, sized(1, 90*mib, mib)),
			why: "no quorum"},
		{name: "alarms not listed: nothing is disarmed", view: clusterView(nospace("2"), func(v *maintView) { v.AlarmsListed = false; v.Policy = compactionPolicy{} }),
			why: "does not list its alarms"},
		{name: "CORRUPT: no maintenance at all, never a disarm", view: clusterView(func(v *maintView) {
			v.Alarms = []contract.EtcdAlarm{{Member: "e-2", ID: "3", Alarm: contract.EtcdAlarmCorrupt}}
			v.Revision = 9000
		}), why: "CORRUPT on e-2: cairn never disarms it"},
		{name: "revision mode: compacts once the store moved on by a tenth of the retention", view: clusterView(func(v *maintView) { v.Revision = 5100 }),
			kind: maintCompact, rev: 4100, why: "keeping the last 1000 revisions"},
		{name: "revision mode: less than a tenth: waits", view: clusterView(func(v *maintView) { v.Revision = 5099 })},
		{name: "revision mode under NOSPACE: any progress is compacted", view: clusterView(nospace("2"), func(v *maintView) { v.Revision = 5001 }),
			kind: maintCompact, rev: 4001},
		{name: "periodic: compacts to the newest sample a retention old", view: clusterView(func(v *maintView) {
			v.Policy = compactionPolicy{Mode: contract.EtcdCompactionPeriodic, Retention: "1h"}
			v.Prev.Compaction.Samples = []contract.EtcdRevisionSample{{At: "2026-11-30T10:54:00Z", Revision: 3900}, {At: "2026-11-30T11:00:00Z", Revision: 4200}, {At: "2026-11-30T11:06:00Z", Revision: 4300}}
		}), kind: maintCompact, rev: 4200, why: "keeping 1h of history"},
		{name: "periodic: nothing a retention old beyond the last compaction", view: clusterView(func(v *maintView) {
			v.Policy = compactionPolicy{Mode: contract.EtcdCompactionPeriodic, Retention: "1h"}
			v.Prev.Compaction.Samples = []contract.EtcdRevisionSample{{At: "2026-11-30T10:54:00Z", Revision: 3900}, {At: "2026-11-30T11:06:00Z", Revision: 4300}}
		})},
		{name: "no policy: nothing compacted", view: clusterView(func(v *maintView) { v.Policy = compactionPolicy{}; v.Revision = 90000 })},
		{name: "a fragmented follower is defragmented", view: clusterView(sized(2, 40*mib, 15*mib)), kind: maintDefrag, member: "e-2", why: "25Mi of its 40Mi file are free pages"},
		{name: "half free but under a tenth of the quota: not yet", view: clusterView(sized(2, 16*mib, 7*mib))},
		{name: "near the quota with a tenth of it free: before NOSPACE", view: clusterView(sized(1, 85*mib, 74*mib)), kind: maintDefrag, member: "e-1"},
		{name: "near the quota with less free: not yet", view: clusterView(sized(1, 85*mib, 80*mib))},
		{name: "followers first, the most free first", view: clusterView(sized(0, 80*mib, 10*mib), sized(1, 40*mib, 15*mib), sized(2, 60*mib, 15*mib)),
			kind: maintDefrag, member: "e-2"},
		{name: "the leader once no other member needs one", view: clusterView(sized(0, 80*mib, 10*mib)), kind: maintDefrag, member: "e-0", why: "it leads"},
		{name: "an unhealthy member holds every defragmentation", view: clusterView(sized(2, 40*mib, 15*mib), func(v *maintView) { v.Members[1].Healthy = false }),
			why: "until e-1 is healthy"},
		{name: "a membership change this pass holds it", view: clusterView(sized(2, 40*mib, 15*mib), func(v *maintView) { v.Busy = "the runtime just promoted e-3" }),
			why: "just promoted"},
		{name: "a defragmentation another replica started holds everything", view: clusterView(sized(2, 40*mib, 15*mib), func(v *maintView) {
			v.Revision = 9000
			v.Prev.Defragmenting = &contract.EtcdDefrag{Member: "e-1", Started: "2026-11-30T11:58:00Z"}
		}), why: "e-1 is being defragmented"},
		{name: "one recorded longer ago than the timeout is over", view: clusterView(sized(2, 40*mib, 15*mib), func(v *maintView) {
			v.Prev.Defragmenting = &contract.EtcdDefrag{Member: "e-1", Started: "2026-11-30T11:50:00Z"}
		}), kind: maintDefrag, member: "e-2"},
		{name: "NOSPACE: compaction before defragmentation", view: clusterView(nospace("1", "2", "3"), sized(0, 100*mib, 99*mib), func(v *maintView) { v.Revision = 5010 }),
			kind: maintCompact, rev: 4010},
		{name: "NOSPACE: members at the quota with room to give back, followers first", view: clusterView(nospace("1", "2", "3"),
			sized(0, 100*mib, 20*mib), sized(1, 100*mib, 20*mib), sized(2, 85*mib, 20*mib)), kind: maintDefrag, member: "e-1", why: "NOSPACE is raised"},
		{name: "NOSPACE: a file below the disarm level is not defragmented for it", view: clusterView(nospace("1"),
			sized(0, 10*mib, 9*mib), sized(1, 79*mib, 60*mib)), kind: maintDisarm, member: "e-0"},
		{name: "NOSPACE: the leader waits while a follower above the level has no free pages to show yet", view: clusterView(nospace("1"),
			sized(0, 100*mib, 20*mib), sized(1, 100*mib, 99*mib), sized(2, 10*mib, 9*mib)), why: "e-0 waits for a defragmentation: it leads, and e-1, at 100Mi of its file, goes first"},
		{name: "NOSPACE: once after a compaction whatever the free pages it shows", view: clusterView(nospace("1"), sized(1, 95*mib, 93*mib), func(v *maintView) {
			v.Prev.Compaction.At = "2026-11-30T11:59:00Z"
			v.Members[1].Defragmented = maintNow.Add(-time.Hour)
		}), kind: maintDefrag, member: "e-1"},
		{name: "NOSPACE: not twice after the same compaction", view: clusterView(nospace("1"), sized(1, 95*mib, 93*mib), func(v *maintView) {
			v.Prev.Compaction.At = "2026-11-30T11:59:00Z"
			v.Members[1].Defragmented = maintNow.Add(-time.Second)
		}), why: "the data needs more room"},
		{name: "NOSPACE: every file below the level: disarmed, member by member", view: clusterView(nospace("2", "3")), kind: maintDisarm, member: "e-1",
			why: "below 80% of its quota"},
		{name: "NOSPACE: the data needs more room", view: clusterView(nospace("1"), sized(1, 95*mib, 93*mib)),
			why: "e-1's database is 95Mi of its 100Mi quota (93Mi in use), not below 80%; if compaction and defragmentation do not bring it below, the data needs more room: raise spec.spaceQuota"},
		{name: "NOSPACE: a member's own quota counts", view: clusterView(nospace("1"), sized(1, 95*mib, 93*mib), func(v *maintView) { v.Members[1].Quota = 200 * mib }),
			kind: maintDisarm, member: "e-0"},
		{name: "NOSPACE: a member that does not answer holds the disarm", view: clusterView(nospace("1"), func(v *maintView) {
			v.Members = append(v.Members, spaceMember{ID: 4, Name: "e-3", Learner: true})
		}), why: "until e-3 is healthy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := decideMaint(tc.view)
			if a.Kind != tc.kind || a.Member.Name != tc.member || a.Revision != tc.rev || !strings.Contains(a.Why, tc.why) {
				t.Errorf("got %s %q rev %d: %s\nwant %s %q rev %d: ...%s...", a.Kind, a.Member.Name, a.Revision, a.Why, tc.kind, tc.member, tc.rev, tc.why)
			}
			if tc.why == "" && tc.kind == maintNone && a.Why != "" {
				t.Errorf("nothing to do says %q", a.Why)
			}
		})
	}
}

// Across passes: never two defragmentations at once, followers before
// the leader, and the disarm only after the last.
func TestDecideMaintDefragmentsOneAtATime(t *testing.T) {
	v := clusterView(nospace("1", "2", "3"), sized(0, 100*mib, 10*mib), sized(1, 100*mib, 10*mib), sized(2, 100*mib, 10*mib))
	var order []string
	for range 10 {
		a := decideMaint(v)
		if a.Kind == maintNone {
			t.Fatalf("stuck after %v: %s", order, a.Why)
		}
		order = append(order, a.Kind.String()+" "+a.Member.Name)
		r := maintResult{Done: true}
		if a.Kind == maintDefrag {
			r.Started, r.Ended = v.Now, v.Now.Add(time.Second)
			for i := range v.Members {
				if v.Members[i].ID == a.Member.ID {
					v.Members[i].DBSize = v.Members[i].InUse
				}
			}
		}
		v.Prev = nextMaint(v, a, r)
		v.Alarms = v.Prev.Alarms
		if len(v.Alarms) == 0 {
			break
		}
	}
	want := []string{"defrag e-1", "defrag e-2", "defrag e-0", "disarm e-0", "disarm e-1", "disarm e-2"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

func TestMaintReportAndEvents(t *testing.T) {
	prev := contract.EtcdMaintenanceStatus{Alarms: []contract.EtcdAlarm{{Member: "e-1", ID: "2", Alarm: contract.EtcdAlarmNoSpace, Since: "2026-11-30T11:00:00Z"}}}
	listed := []*etcdserverpb.AlarmMember{{MemberID: 2, Alarm: etcdserverpb.AlarmType_NOSPACE}, {MemberID: 3, Alarm: etcdserverpb.AlarmType_CORRUPT}}
	alarms := listedAlarms(prev.Alarms, listed, map[uint64]string{2: "e-1", 3: "e-2"}, maintNow)
	if len(alarms) != 2 || alarms[0].Since != "2026-11-30T11:00:00Z" || alarms[1].Since != "2026-11-30T12:00:00Z" || alarms[1].Member != "e-2" {
		t.Fatalf("alarms %+v", alarms)
	}
	v := clusterView(func(v *maintView) { v.Prev, v.Alarms = prev, alarms })
	next := nextMaint(v, maintAction{}, maintResult{})
	evs := maintEvents(prev, next, maintAction{}, maintResult{})
	if len(evs) != 1 || evs[0].Reason != contract.ReasonEtcdAlarmRaised || evs[0].Type != "Warning" || !strings.Contains(evs[0].Message, "CORRUPT on e-2") {
		t.Errorf("events %+v", evs)
	}
	// The same alarms again: no Event.
	if evs := maintEvents(next, nextMaint(clusterView(func(v *maintView) { v.Prev, v.Alarms = next, alarms }), maintAction{}, maintResult{}), maintAction{}, maintResult{}); len(evs) != 0 {
		t.Errorf("repeated events %+v", evs)
	}
	// The runtime disarms NOSPACE; someone else CORRUPT.
	a := maintAction{Kind: maintDisarm, Member: spaceMember{ID: 2, Name: "e-1"}, Why: "every member's database is below 80% of its quota"}
	after := nextMaint(clusterView(func(v *maintView) { v.Prev, v.Alarms = next, alarms[:1] }), a, maintResult{Done: true})
	if len(after.Alarms) != 0 {
		t.Errorf("alarms after the disarm %+v", after.Alarms)
	}
	evs = maintEvents(next, after, a, maintResult{Done: true})
	if len(evs) != 2 || evs[0].Reason != contract.ReasonEtcdAlarmCleared || !strings.Contains(evs[0].Message, "disarmed NOSPACE on e-1, raised since 2026-11-30T11:00:00Z") ||
		!strings.Contains(evs[1].Message, "CORRUPT on e-2 is no longer raised (disarmed outside cairn)") {
		t.Errorf("events %+v", evs)
	}
	// A defragmentation, and one that failed.
	d := maintAction{Kind: maintDefrag, Member: spaceMember{ID: 3, Name: "e-2"}, Why: "25Mi of its 40Mi file are free pages"}
	r := maintResult{Done: true, Started: maintNow, Ended: maintNow.Add(1500 * time.Millisecond), Freed: 25 * mib}
	st := nextMaint(clusterView(), d, r)
	if st.LastDefrag == nil || st.LastDefrag.Member != "e-2" || st.LastDefrag.Freed != 25*mib || st.Defragmenting != nil {
		t.Errorf("report %+v", st)
	}
	if evs := maintEvents(contract.EtcdMaintenanceStatus{}, st, d, r); len(evs) != 1 || !strings.Contains(evs[0].Message, "defragmented e-2 in 1.5s: its file shrank by 25Mi") {
		t.Errorf("events %+v", evs)
	}
	r.Err = errors.New("context deadline exceeded")
	if evs := maintEvents(contract.EtcdMaintenanceStatus{}, nextMaint(clusterView(), d, r), d, r); len(evs) != 1 || evs[0].Type != "Warning" {
		t.Errorf("events %+v", evs)
	}
}

// Periodic mode samples the revision every tenth of the retention and
// keeps the samples from the newest one a retention old.
func TestMaintSamplesRevisions(t *testing.T) {
	v := clusterView(func(v *maintView) {
		v.Policy = compactionPolicy{Mode: contract.EtcdCompactionPeriodic, Retention: "1h"}
		v.Prev.Compaction.Revision = 0
	})
	var st contract.EtcdMaintenanceStatus
	for i := range 30 {
		v.Now, v.Revision = maintNow.Add(time.Duration(i)*3*time.Minute), int64(1000+i)
		a := decideMaint(v)
		r := maintResult{Done: a.Kind == maintCompact}
		st = nextMaint(v, a, r)
		v.Prev = st
	}
	// 30 passes 3 minutes apart: a sample every 6 minutes; the last
	// compaction went to the sample an hour before the last pass at most.
	if n := len(st.Compaction.Samples); n < 10 || n > 12 {
		t.Errorf("%d samples: %+v", n, st.Compaction.Samples)
	}
	if st.Compaction.Revision == 0 || st.Compaction.Revision > 1030-20 {
		t.Errorf("compacted to %d", st.Compaction.Revision)
	}
	if !sameMaint(st, func() contract.EtcdMaintenanceStatus { s := st; s.ObservedAt = "x"; return s }()) {
		t.Error("a report that differs only in when is not the same")
	}
}

// Sizes that move a little keep the last report's; a move by a twentieth
// shows.
func TestSteadySizes(t *testing.T) {
	prev := contract.EtcdMaintenanceStatus{Members: []contract.EtcdMemberSpace{{ID: "1", DBSize: 100 * mib, DBSizeInUse: 50 * mib}, {ID: "2", DBSize: 100 * mib, DBSizeInUse: 50 * mib}}}
	next := contract.EtcdMaintenanceStatus{Members: []contract.EtcdMemberSpace{{ID: "1", DBSize: 101 * mib, DBSizeInUse: 52 * mib}, {ID: "2", DBSize: 100 * mib, DBSizeInUse: 20 * mib}, {ID: "3", DBSize: 1}}}
	got := steadySizes(prev, next)
	if m := got.Members[0]; m.DBSize != 100*mib || m.DBSizeInUse != 50*mib {
		t.Errorf("a small move shows: %+v", m)
	}
	if m := got.Members[1]; m.DBSizeInUse != 20*mib || got.Members[2].DBSize != 1 {
		t.Errorf("a large move or a new member does not show: %+v", got.Members)
	}
	if next.Members[0].DBSize != 101*mib {
		t.Error("steadySizes changed its input")
	}
}
