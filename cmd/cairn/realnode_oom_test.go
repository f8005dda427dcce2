package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/runtime/agent/postgres"
	"github.com/cairn-dev/cairn/testbed"
)

// oomQuery builds gigabytes in one backend's memory: array_agg keeps a
// copy of each 1 MiB value (64 bytes of two md5 sums repeated, a row's
// own: a repeat of one character copies byte by byte, 64 times the
// work) in the aggregate's memory until the last row, and no work_mem
// bounds it. 4,096 of them are 4 GiB, past any limit a test
// node gives a member; the kernel's OOM killer ends it long before.
const oomQuery = "SELECT array_length(array_agg(repeat(md5(g::text) || md5((-g)::text), 16384)), 1) FROM generate_series(1, 4096) g"

// oomFirstID is where the OOM phase's writer starts its ids: past those
// of a writer the cluster had before (a few thousand).
const oomFirstID = 1_000_000

// oomKilledInPlace: a primary's server OOM-killed by the kernel under
// the memory limit its spec sets, its node and volume healthy, recovers
// in place (docs/runtime.md, "A crashed server: recovery in place").
// The limit the spec sets (pgMemoryLimit) is on the live container and
// is the kernel's limit of its memory cgroup. With a writer going
// through -rw, one session on the primary runs oomQuery: the query
// fails, and the container's cgroup counts one more OOM kill (the test
// fails if it counts none). The kernel kills the process with the most
// memory (every process of the container has the kubelet's
// oom_score_adj for a Burstable pod, 998 here), the query's backend: the
// server's log says "server process (PID <its pid>) was terminated by
// signal 9", and the test fails if it does not. The postmaster lives
// and restarts on its own (restart_after_crash): every session ends,
// shared memory is reinitialised, crash recovery replays the WAL. The
// postmaster's pid and the container's restart count do not change; the
// same pod stays labelled primary, the runtime does not fail over,
// writes through -rw resume with no acknowledged write lost, no pull
// request is opened and Flux finds no drift.
func (l *loop) oomKilledInPlace(cluster, primary string) {
	t := l.t
	phase := time.Now()
	c := l.cp.Client(t)
	pod, err := c.CoreV1().Pods(l.ns).Get(l.ctx, primary, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limit := resource.MustParse(pgMemoryLimit)
	ctr, restarts := memberContainer(pod)
	if got := ctr.Resources.Limits[corev1.ResourceMemory]; got.Cmp(limit) != 0 {
		t.Fatalf("%s's container %s has the memory limit %s, the spec sets %s", primary, contract.PostgresContainer, got.String(), pgMemoryLimit)
	}
	before, err := l.node.ContainerMemory(t, l.ns, primary, contract.PostgresContainer)
	if err != nil {
		t.Fatal(err)
	}
	if before.Limit != limit.Value() {
		t.Fatalf("the kernel's memory limit of %s's container is %d bytes (%s), the spec sets %s", primary, before.Limit, before.Cgroup, pgMemoryLimit)
	}

	w := l.startPgWriterFrom(cluster, oomFirstID)
	w.waitAcked(t, "writes through -rw before the OOM kill", 50)
	ackedBefore, _, _ := w.look()
	start := time.Now()
	backend, postmaster, qerr := l.serverPids(cluster, pod.Status.PodIP, oomQuery)
	killed := time.Now()
	// The writes acknowledged while the query grew, and the writer's
	// longest outage meanwhile.
	ackedAtKill, longest, _ := w.look()
	if qerr == nil {
		t.Fatalf("%s: the query finished under a memory limit of %s", oomQuery, pgMemoryLimit)
	}
	after, err := l.node.ContainerMemory(t, l.ns, primary, contract.PostgresContainer)
	if err != nil {
		t.Fatalf("the query ended (%v), and %s's container: %v", qerr, primary, err)
	}
	if after.OOMKills <= before.OOMKills {
		t.Fatalf("nothing was OOM-killed in %s's container (oom_kill %d before, %d after, %s): the query ended with %v", primary, before.OOMKills, after.OOMKills, after.Cgroup, qerr)
	}

	// Writes through -rw again, the same pod primary throughout, no pull
	// request.
	testbed.EventuallyWithin(t, 2*time.Minute, "writes through -rw again after the OOM kill", func() error {
		if o := l.pass()[cluster]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request after the OOM kill: %+v", o)
		}
		roles, err := l.roles(cluster)
		if err != nil {
			return err
		}
		if role := strings.TrimSuffix(roles[primary], "(not ready)"); role != contract.RolePrimary {
			t.Fatalf("%s is labelled %q after the OOM kill: roles %v", primary, roles[primary], roles)
		}
		n, outage, last := w.look()
		longest = max(longest, outage)
		if n < ackedAtKill+10 {
			return fmt.Errorf("%d writes since the OOM kill; last error: %v", n-ackedAtKill, last)
		}
		return nil
	})
	resumed := time.Since(killed)
	testbed.Eventually(t, "the cluster whole with "+primary+" its primary", func() error {
		p, err := l.primaryOf(cluster, 3)
		if err == nil && p != primary {
			err = fmt.Errorf("the primary is %s, was %s", p, primary)
		}
		return err
	})
	_, postmasterAfter, _ := l.serverPids(cluster, pod.Status.PodIP, "")
	now, err := c.CoreV1().Pods(l.ns).Get(l.ctx, primary, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, restartsAfter := memberContainer(now)
	logs, err := l.node.PodLogs(l.ns, primary)
	if err != nil {
		t.Fatal(err)
	}
	killLine := fmt.Sprintf("server process (PID %d) was terminated by signal 9", backend)
	time.Sleep(2 * time.Second)
	acked, lost := w.stop(l, cluster)
	events := l.runtimeEvents(start)
	t.Logf("OOM kill of %s under its memory limit %s (%s): the query failed after %.1fs (%v), %d writes acknowledged through -rw meanwhile; oom_kill %d -> %d; the server's log says %q: %v; the postmaster %d -> %d, the container's restarts %d -> %d; ten writes through -rw again %.1fs after the kill, the writer's longest outage %s; the runtime's Events since the query: %q; %d writes acknowledged through -rw, %d lost, %d failed; the phase took %.1fs",
		primary, pgMemoryLimit, after.Cgroup, killed.Sub(start).Seconds(), qerr, ackedAtKill-ackedBefore, before.OOMKills, after.OOMKills, killLine, strings.Contains(logs, killLine),
		postmaster, postmasterAfter, restarts, restartsAfter, resumed.Seconds(), longest, events, acked, lost, w.failed, time.Since(phase).Seconds())
	if !strings.Contains(logs, killLine) {
		t.Errorf("the server's log does not say %q: the kernel killed another process than the query's backend (the postmaster %d -> %d, the container's restarts %d -> %d)",
			killLine, postmaster, postmasterAfter, restarts, restartsAfter)
	}
	if postmasterAfter != postmaster || restartsAfter != restarts || now.UID != pod.UID {
		t.Errorf("a backend's OOM kill restarted more than PostgreSQL's sessions: the postmaster %d -> %d, the container's restarts %d -> %d, the pod %s -> %s",
			postmaster, postmasterAfter, restarts, restartsAfter, pod.UID, now.UID)
	}
	if strings.Contains(events, postgres.ReasonFailover) {
		t.Errorf("the runtime failed over after the OOM kill of a backend: %s", events)
	}
	if acked <= ackedAtKill || lost > 0 {
		t.Errorf("%d writes acknowledged through -rw (%d before the OOM kill), %d of them lost", acked, ackedAtKill, lost)
	}
	if o := l.pass()[cluster]; o.Action == publish.ActionOpened || len(l.openOf(cluster)) != 0 {
		t.Fatalf("a pull request after the OOM kill: %+v, open %d", o, len(l.openOf(cluster)))
	}
	l.noDrift("after the OOM kill")
}

// memberContainer is a member pod's PostgreSQL container and its restart
// count.
func memberContainer(p *corev1.Pod) (corev1.Container, int32) {
	var restarts int32 = -1
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == contract.PostgresContainer {
			restarts = s.RestartCount
		}
	}
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == contract.PostgresContainer {
			return ctr, restarts
		}
	}
	return corev1.Container{}, restarts
}

// serverPids runs sql in a session of its own through -rw, with a
// minute for it, once it has read there the pid of its backend and the
// postmaster's (the first line of postmaster.pid; pids of the
// container's pid namespace, as the server's log names them); the
// server must be the member at ip. It returns how sql ended; an empty
// sql only reads the pids.
func (l *loop) serverPids(cluster, ip, sql string) (backend, postmaster int, err error) {
	t := l.t
	var (
		ctx  context.Context
		conn *pgx.Conn
		done func()
		addr string
	)
	testbed.Eventually(t, "a session on the server behind -rw", func() error {
		var err error
		if ctx, conn, done, err = l.rwConn(cluster, time.Minute); err != nil {
			return err
		}
		err = conn.QueryRow(ctx, `SELECT host(inet_server_addr()), pg_backend_pid(), split_part(pg_read_file('postmaster.pid'), E'\n', 1)::int`).Scan(&addr, &backend, &postmaster)
		if err != nil {
			done()
		}
		return err
	})
	defer done()
	if addr != ip {
		t.Fatalf("-rw reached %s, the primary is at %s", addr, ip)
	}
	if sql != "" {
		_, err = conn.Exec(ctx, sql)
	}
	return backend, postmaster, err
}
