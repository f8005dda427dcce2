package postgres

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
)

func TestDecidePostgres(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	up := func(name, label string, recv uint64) pgMember {
		return pgMember{Name: name, Label: label, Probe: pgProbe{Reach: reachUp, InRecovery: true, Streaming: true, Received: recv, Replayed: recv}}
	}
	prim := func(name, label string, lsn uint64) pgMember {
		return pgMember{Name: name, Label: label, Probe: pgProbe{Reach: reachUp, Received: lsn, Replayed: lsn}}
	}
	down := func(name, label string, r reach) pgMember {
		return pgMember{Name: name, Label: label, Probe: pgProbe{Reach: r}}
	}
	noPromote := func(m pgMember) pgMember { m.NoPromote = true; return m }
	since := func(d time.Duration, names ...string) map[string]time.Time {
		out := map[string]time.Time{}
		for _, n := range names {
			out[n] = t0.Add(-d)
		}
		return out
	}
	cases := []struct {
		name string
		v    pgView
		kind pgActionKind
		to   string
		why  string
	}{
		{name: "one primary, labels follow: demote first", v: pgView{Members: []pgMember{down("a", contract.RolePrimary, reachDown), prim("b", contract.RoleReplica, 9), up("c", "", 9)}},
			kind: pgLabel},
		{name: "labels true, nothing to do", v: pgView{Members: []pgMember{prim("a", contract.RolePrimary, 9), up("b", contract.RoleReplica, 9)}}, kind: pgNone},
		{name: "a fenced member answering as primary is never labelled primary", v: pgView{Members: []pgMember{prim("a", contract.RoleFenced, 9), up("b", contract.RoleReplica, 9)}},
			kind: pgNone, why: "is fenced"},
		{name: "two primaries: no label changes", v: pgView{Members: []pgMember{prim("a", contract.RolePrimary, 9), prim("b", contract.RoleReplica, 9)}}, kind: pgNone, why: "2 members"},
		{name: "synchronous standbys kept", v: pgView{Sync: 1, Members: []pgMember{prim("a", contract.RolePrimary, 9), up("b", contract.RoleReplica, 9), noPromote(up("c", contract.RoleReplica, 9))}},
			kind: pgSetSync},
		{name: "down primary: not yet", v: pgView{Unhealthy: since(time.Second, "a"), Members: []pgMember{down("a", contract.RolePrimary, reachDown), up("b", contract.RoleReplica, 9)}},
			kind: pgNone, why: "failover after 2s"},
		{name: "down primary: fail over", v: pgView{Unhealthy: since(2*time.Second, "a"), Members: []pgMember{down("a", contract.RolePrimary, reachDown), up("b", contract.RoleReplica, 9)}},
			kind: pgBeginFailover},
		{name: "a primary that only times out gets longer", v: pgView{Unhealthy: since(5*time.Second, "a"), Members: []pgMember{down("a", contract.RolePrimary, reachTimeout), up("b", contract.RoleReplica, 9)}},
			kind: pgNone, why: "failover after 10s"},
		{name: "timing out for long: fail over", v: pgView{Unhealthy: since(10*time.Second, "a"), Members: []pgMember{down("a", contract.RolePrimary, reachTimeout), up("b", contract.RoleReplica, 9)}},
			kind: pgBeginFailover},
		{name: "the primary's pod is gone: fail over", v: pgView{Status: pgStatus{Primary: "a"}, Unhealthy: since(2*time.Second, "a"), Members: []pgMember{up("b", contract.RoleReplica, 9)}},
			kind: pgBeginFailover},
		{name: "no primary known: nothing", v: pgView{Members: []pgMember{up("b", contract.RoleReplica, 9)}}, kind: pgNone, why: "none is labelled primary"},
		{name: "no replica may be promoted", v: pgView{Unhealthy: since(5*time.Second, "a"), Members: []pgMember{down("a", contract.RolePrimary, reachDown), noPromote(up("b", contract.RoleReplica, 9))}},
			kind: pgNone, why: "no replica that may be promoted"},
		{name: "recorded: fence first", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a"}}, Members: []pgMember{down("a", contract.RolePrimary, reachDown), up("b", contract.RoleReplica, 9)}},
			kind: pgFence},
		{name: "fenced and down: promote the most received", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0}},
			Members: []pgMember{down("a", contract.RoleFenced, reachDown), up("b", contract.RoleReplica, 7), up("c", contract.RoleReplica, 9), noPromote(up("d", contract.RoleReplica, 12))}},
			kind: pgPromote, to: "c"},
		{name: "fenced but still answering as primary: wait", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0.Add(-time.Hour)}},
			Members: []pgMember{prim("a", contract.RoleFenced, 9), up("b", contract.RoleReplica, 9)}}, kind: pgNone, why: "waiting for the fenced a to stop"},
		{name: "fenced and unreachable: wait for its lease", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0.Add(-10 * time.Second)}},
			Members: []pgMember{down("a", contract.RoleFenced, reachTimeout), up("b", contract.RoleReplica, 9)}}, kind: pgNone, why: "lease ends in 3s"},
		{name: "fenced, unreachable, lease over: promote", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0.Add(-13 * time.Second)}},
			Members: []pgMember{down("a", contract.RoleFenced, reachTimeout), up("b", contract.RoleReplica, 9)}}, kind: pgPromote, to: "b"},
		{name: "a recorded target is kept", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0, To: "b"}},
			Members: []pgMember{down("a", contract.RoleFenced, reachDown), up("b", contract.RolePrimary, 7), up("c", contract.RoleReplica, 9)}}, kind: pgPromote, to: "b"},
		{name: "a recorded target that is down: waits", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0, To: "b"}}, Unhealthy: since(time.Second, "a", "b"),
			Members: []pgMember{down("a", contract.RoleFenced, reachDown), down("b", contract.RolePrimary, reachDown), up("c", contract.RoleReplica, 9)}}, kind: pgNone, why: "waiting for b"},
		{name: "a recorded target down for long: failed over from in turn", v: pgView{Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0, To: "b"}}, Unhealthy: since(3*time.Second, "a", "b"),
			Members: []pgMember{down("a", contract.RoleFenced, reachDown), down("b", contract.RolePrimary, reachDown), up("c", contract.RoleReplica, 9)}}, kind: pgRetarget, why: "b is down too"},
		{name: "synchronous: only a synchronous replica with all their WAL", v: pgView{Sync: 1, Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0}, Synchronous: []string{"b"}},
			Members: []pgMember{down("a", contract.RoleFenced, reachDown), up("b", contract.RoleReplica, 7), up("c", contract.RoleReplica, 9)}}, kind: pgPromote, to: "b"},
		{name: "synchronous: none recorded, promote none", v: pgView{Sync: 1, Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0}},
			Members: []pgMember{down("a", contract.RoleFenced, reachDown), up("b", contract.RoleReplica, 7)}}, kind: pgNone, why: "no replica was recorded synchronous"},
		{name: "synchronous: the synchronous one does not answer", v: pgView{Sync: 1, Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0}, Synchronous: []string{"b"}},
			Members: []pgMember{down("a", contract.RoleFenced, reachDown), down("b", contract.RoleReplica, reachDown), up("c", contract.RoleReplica, 9)}}, kind: pgNone, why: "none of the synchronous replicas (b) answers"},
		{name: "synchronous: a no-promote synchronous replica holds more", v: pgView{Sync: 2, Status: pgStatus{Failover: &pgFailover{From: "a", FencedAt: t0}, Synchronous: []string{"b", "c"}},
			Members: []pgMember{down("a", contract.RoleFenced, reachDown), up("b", contract.RoleReplica, 7), noPromote(up("c", contract.RoleReplica, 9))}}, kind: pgNone, why: "holds all their WAL"},
		{name: "switchover: starts once the target streams", v: pgView{Switchover: pgRequest{ID: "s1", To: "b"},
			Members: []pgMember{prim("a", contract.RolePrimary, 9), up("b", contract.RoleReplica, 9)}}, kind: pgBeginSwitchover, to: "b"},
		{name: "switchover: done already", v: pgView{Switchover: pgRequest{ID: "s1", To: "b"}, Status: pgStatus{SwitchoverDone: "s1"},
			Members: []pgMember{prim("a", contract.RolePrimary, 9), up("b", contract.RoleReplica, 9)}}, kind: pgNone},
		{name: "switchover: to the primary itself is done", v: pgView{Switchover: pgRequest{ID: "s1", To: "a"},
			Members: []pgMember{prim("a", contract.RolePrimary, 9), up("b", contract.RoleReplica, 9)}}, kind: pgSwitchDone, to: "a"},
		{name: "switchover: target not streaming", v: pgView{Switchover: pgRequest{ID: "s1", To: "b"},
			Members: []pgMember{prim("a", contract.RolePrimary, 9), down("b", contract.RoleReplica, reachDown)}}, kind: pgNone, why: "not a streaming replica"},
		{name: "switchover: waits for the target to replay", v: pgView{Status: pgStatus{Switchover: &pgSwitchover{ID: "s1", From: "a", To: "b", StartedAt: t0, LSN: 9}},
			Members: []pgMember{prim("a", contract.RolePrimary, 9), up("b", contract.RoleReplica, 7)}}, kind: pgSwitchWait, to: "b"},
		{name: "switchover: caught up and still: fence", v: pgView{Status: pgStatus{Switchover: &pgSwitchover{ID: "s1", From: "a", To: "b", StartedAt: t0, LSN: 9}},
			Members: []pgMember{prim("a", contract.RolePrimary, 9), up("b", contract.RoleReplica, 9)}}, kind: pgSwitchFence, to: "b"},
		{name: "switchover: too slow, writes given back", v: pgView{Status: pgStatus{Switchover: &pgSwitchover{ID: "s1", From: "a", To: "b", StartedAt: t0.Add(-time.Minute), LSN: 9}},
			Members: []pgMember{prim("a", contract.RolePrimary, 9), up("b", contract.RoleReplica, 7)}}, kind: pgSwitchAbort, to: "b"},
		{name: "switchover: fenced primary stopped: promote", v: pgView{Status: pgStatus{Switchover: &pgSwitchover{ID: "s1", From: "a", To: "b", StartedAt: t0, LSN: 9, FencedAt: t0}},
			Members: []pgMember{down("a", contract.RoleFenced, reachDown), up("b", contract.RoleReplica, 10)}}, kind: pgPromote, to: "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.v.Now, c.v.Settings = t0, FailoverSettings{}.withDefaults()
			a := decidePostgres(c.v)
			if a.Kind != c.kind || a.To != c.to || !strings.Contains(a.Why, c.why) {
				t.Fatalf("got %s to %q (%s), want %s to %q (%s)", a.Kind, a.To, a.Why, c.kind, c.to, c.why)
			}
		})
	}
}

func TestLabelFixesDemoteFirst(t *testing.T) {
	got := labelFixes([]pgMember{
		{Name: "a", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachDown}},
		{Name: "b", Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp}},
		{Name: "c", Label: contract.RoleFenced, Probe: pgProbe{Reach: reachUp, InRecovery: true}},
	}, "b")
	want := []labelChange{{"a", contract.RoleFenced}, {"b", contract.RolePrimary}, {"c", contract.RoleReplica}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestSyncSetting(t *testing.T) {
	ms := []pgMember{{Name: "a"}, {Name: "d", NoPromote: true}, {Name: "c"}, {Name: "b"}}
	if got, want := syncSetting(ms, "a", 2), `FIRST 2 ("b", "c", "d")`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got := syncSetting(ms, "a", 0); got != "" {
		t.Fatalf("got %q", got)
	}
}

func TestParseLSN(t *testing.T) {
	v, err := parseLSN("16/B374D848")
	if err != nil || formatLSN(v) != "16/B374D848" {
		t.Fatalf("%x %v", v, err)
	}
}

func TestContainerStopped(t *testing.T) {
	now := metav1.Now()
	running := corev1.ContainerStatus{Name: "postgres", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	waiting := corev1.ContainerStatus{Name: "postgres", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
	for _, c := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"running", corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1", Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running}}}, false},
		{"no status yet", corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1"}}, false},
		{"container waiting", corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1", ContainerStatuses: []corev1.ContainerStatus{waiting}}}, true},
		{"no address", corev1.Pod{}, true},
		{"being deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{PodIP: "10.0.0.1"}}, true},
		{"failed", corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1", Phase: corev1.PodFailed}}, true},
	} {
		if got := containerStopped(&c.pod); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want reach
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, reachDown},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, reachDown},
		{context.DeadlineExceeded, reachTimeout},
		{errors.New("password authentication failed"), reachTimeout},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("%v: %s, want %s", c.err, got, c.want)
		}
	}
}
