package postgres

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pginstance "github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
)

// The primary's server crashes (kill -9 of the postmaster and every
// process it started) on a node that is fine: its instance manager
// restarts it in place and the runtime waits for it, within bounds. One
// control plane serves every case.
func TestPostgresCrashRecovery(t *testing.T) {
	cp := testbed.Start(t)
	t.Run("a crashed server recovers in place: no failover, no acknowledged row lost", func(t *testing.T) { recoversInPlace(t, cp) })
	t.Run("its instance manager killed with it (node-like loss): fails over as before", func(t *testing.T) { managerGone(t, cp) })
	t.Run("a crash loop fails over", func(t *testing.T) { crashLoop(t, cp) })
	t.Run("a recovery past the window fails over", func(t *testing.T) { recoveryPastWindow(t, cp) })
}

// crashAndWrite crashes the primary's server, its instance manager
// alive, and returns the time from the crash to the first write through
// the -rw address, and when the crash was.
func crashAndWrite(pc *pgCluster, old, id int) (time.Duration, time.Time) {
	start := time.Now()
	pc.crash(old)
	attempt := 0
	pc.waitFor("a write through -rw", func() error {
		attempt++
		return pc.write(context.Background(), id+attempt<<20)
	})
	return time.Since(start), start
}

// waitRecovered waits until the runtime has recorded member ord's
// recovery in place from a crash after at.
func (pc *pgCluster) waitRecovered(ord int, at time.Time) {
	pc.t.Helper()
	pc.waitFor("the recovery in place recorded", func() error {
		r := pc.status().LastRecovery
		if r == nil || r.Member != fmt.Sprintf("pg-%d", ord) || r.CrashedAt.Before(at) {
			return fmt.Errorf("last recovery %+v", r)
		}
		return nil
	})
}

// failedOver waits until the status records one failover, done, and
// returns it.
func (pc *pgCluster) failedOver() pgStatus {
	pc.t.Helper()
	var st pgStatus
	pc.waitFor("the failover recorded done", func() error {
		if st = pc.status(); st.Failovers != 1 || st.Failover != nil || st.LastFailover == nil {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	return st
}

// waitReplicated writes row id on member primary and waits until every
// other member has replayed it.
func (pc *pgCluster) waitReplicated(primary, id int) {
	pc.t.Helper()
	// Synchronously, the write waits for a standby to reconnect; one cut
	// short by its timeout may have committed locally.
	pc.waitFor(fmt.Sprintf("row %d written", id), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := pc.m.dial(ctx, primary)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		_, err = c.Exec(ctx, "INSERT INTO t VALUES ($1) ON CONFLICT DO NOTHING", id)
		return err
	})
	pc.waitFor(fmt.Sprintf("row %d on every replica", id), func() error {
		for i := range pc.n {
			if i == primary {
				continue
			}
			if got, err := pc.m.ids(i); err != nil || !got[id] {
				return fmt.Errorf("pg-%d: %v", i, err)
			}
		}
		return nil
	})
}

// eventsWith counts the Events of reason whose message holds text.
func (pc *pgCluster) eventsWith(reason, text string) int {
	evs, err := pc.c.CoreV1().Events(pc.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		pc.t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == reason && strings.Contains(e.Message, text) {
			n++
		}
	}
	return n
}

func recoversInPlace(t *testing.T, cp *testbed.ControlPlane) {
	pc, ctx := setUp(t, cp, 3, 0, FailoverSettings{}, 0)
	w := pc.sampleWriters(ctx)
	acks := startAckWriter(pc, 1)
	acks.waitRows(pc, "rows written", 50)
	old := pc.primary()
	took, at := crashAndWrite(pc, old, 1_000_000)
	t.Logf("kill -9 of pg-%d's server to the first write through -rw: %s", old, took)
	before := acks.count()
	acks.waitRows(pc, "rows written after the recovery", before+50)
	checkRows(t, pc, acks.finish())
	pc.waitRecovered(old, at)
	pc.waitFor("healthy", pc.healthy)
	w.check(t)
	if st, p := pc.status(), pc.primary(); st.Failovers != 0 || st.Failover != nil || p != old {
		t.Errorf("primary pg-%d (was pg-%d), status %+v", p, old, st)
	}
	if n := pc.eventsWith(ReasonRecoveredInPlace, fmt.Sprintf("pg-%d crashed", old)); n != 1 {
		t.Errorf("%d %s Events, want 1", n, ReasonRecoveredInPlace)
	}
}

func managerGone(t *testing.T, cp *testbed.ControlPlane) {
	pc, _ := setUp(t, cp, 3, 0, FailoverSettings{}, 0)
	took, old := killAndWrite(pc, 1)
	t.Logf("kill -9 of pg-%d and its instance manager to the first write through -rw: %s", old, took)
	rejoin(pc, old)
	st := pc.status()
	if st.Failovers != 1 || st.LastFailover == nil || st.LastFailover.From != fmt.Sprintf("pg-%d", old) || !strings.Contains(st.LastFailover.Reason, "is down for") {
		t.Errorf("status %+v, last failover %+v", st, st.LastFailover)
	}
	if st.LastRecovery != nil {
		t.Errorf("a recovery in place recorded: %+v", st.LastRecovery)
	}
}

// The server crashes, recovers in place, and crashes again at once: its
// instance manager does not restart it a second time, and the runtime
// fails over without waiting for a recovery, saying why.
func crashLoop(t *testing.T, cp *testbed.ControlPlane) {
	pc, ctx := setUp(t, cp, 3, 0, FailoverSettings{}, 0)
	w := pc.sampleWriters(ctx)
	old := pc.primary()
	_, at := crashAndWrite(pc, old, 1)
	pc.waitRecovered(old, at)
	// The replicas stream again (asynchronous: what they have not
	// received, a failover loses).
	pc.waitReplicated(old, 3)
	nd := pc.nodes[old]
	pc.crash(old)
	pc.awaitExit(old, nd)
	pc.nodes[old] = nil
	pc.waitFor("another primary takes writes", func() error {
		if p := pc.primary(); p == old || p < 0 {
			return fmt.Errorf("primary pg-%d", p)
		}
		return pc.write(context.Background(), 4)
	})
	st := pc.failedOver()
	if !strings.Contains(st.LastFailover.Reason, "(a crash loop)") {
		t.Errorf("status %+v, last failover %+v", st, st.LastFailover)
	}
	rejoin(pc, old)
	w.check(t)
	if n := pc.eventsWith(ReasonFailoverStarted, "(a crash loop)"); n != 1 {
		t.Errorf("%d %s Events say it is a crash loop, want 1", n, ReasonFailoverStarted)
	}
}

// The restarted server's recovery does not end (an archive recovery
// whose restore_command never returns): its postmaster answers that it
// is starting for longer than the window, and the runtime fails over,
// promoting once the fenced member's lease has passed, since it may
// take writes when its recovery ends. It never answers as a primary
// beside the new one.
func recoveryPastWindow(t *testing.T, cp *testbed.ControlPlane) {
	ttl := 4 * time.Second
	pc, ctx := setUp(t, cp, 3, 0, FailoverSettings{Recovery: 3 * time.Second, LeaseTTL: ttl}, ttl)
	w := pc.sampleWriters(ctx)
	old := pc.primary()
	pgdata := pc.nodes[old].p.PGData
	pc.m.exec(old, "ALTER SYSTEM SET restore_command = 'sleep 600'")
	signal := filepath.Join(pgdata, "recovery.signal")
	if err := os.WriteFile(signal, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if c := pc.m.cred; c != nil {
		if err := os.Chown(signal, int(c.Uid), int(c.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	pc.crash(old)
	pc.waitFor("another primary takes writes", func() error {
		if p := pc.primary(); p == old || p < 0 {
			return fmt.Errorf("primary pg-%d", p)
		}
		return pc.write(context.Background(), 1)
	})
	st := pc.failedOver()
	t.Logf("failed over %s after the crash", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(st.LastFailover.Reason, "is in crash recovery in place for") {
		t.Errorf("status %+v, last failover %+v", st, st.LastFailover)
	}
	// The member still recovers; it goes as its node would, and comes
	// back without the test's recovery settings.
	pc.kill9(old)
	if err := os.Remove(signal); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	auto := filepath.Join(pgdata, "postgresql.auto.conf")
	data, err := os.ReadFile(auto)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasPrefix(l, "restore_command") {
			keep = append(keep, l)
		}
	}
	if err := os.WriteFile(auto, []byte(strings.Join(keep, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	rejoin(pc, old)
	w.check(t)
}

// BenchmarkCrashRecovery kills the primary's server b.N times
// (-benchtime 20x), kill -9 of the postmaster and every process it
// started, its instance manager alive, a writer running throughout, with
// asynchronous (sync=0) and synchronous (sync=1) replication. Each time
// the instance manager restarts it in place and crash recovery replays
// its WAL; the runtime fails over from none. It reports the time from
// each kill to the first write through -rw and the acknowledged rows
// lost (any fails it), beside BenchmarkFailover's failovers:
//
//	go test ./runtime/agent/postgres -run '^$' -bench '^Benchmark(Failover|FailoverSync|CrashRecovery)$' -benchtime 20x
//
// The same primary is killed every few seconds, each time after it is
// healthy again: the members' and the runtime's crash loop window is set
// to a millisecond, so no kill counts as a crash loop (the crash loop has
// a test of its own).
//
// sync=1 measures the choice not taken: a member told its cluster is
// synchronous is not restarted in place (it fails over, as
// BenchmarkFailoverSync measures); here the members are not told, so they
// recover in place while the runtime and the primary run synchronously.
func BenchmarkCrashRecovery(b *testing.B) {
	for _, sync := range []int{0, 1} {
		b.Run(fmt.Sprintf("sync=%d", sync), func(b *testing.B) { crashRecovery(b, sync) })
	}
}

func crashRecovery(b *testing.B, sync int) {
	pc, ctx, recorded := benchClusterWith(b, fmt.Sprintf("pgcrash%d", sync), sync, FailoverSettings{CrashLoop: time.Millisecond},
		func(p *pginstance.Manager) { p.CrashLoopWindow, p.Config.SynchronousStandbys = time.Millisecond, 0 })
	acks := pc.sampleFor(ctx, sync)
	w := startAckWriter(pc, 1)
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		old := pc.primary()
		d, at := crashAndWrite(pc, old, 1_000_000+i)
		took = append(took, d)
		b.StopTimer()
		pc.waitRecovered(old, at)
		pc.waitFor("healthy", pc.healthy)
		pc.waitFor("a synchronous standby recorded", recorded)
		// Every replica streams again before the next kill.
		pc.waitReplicated(old, 2_000_000+i)
		b.StartTimer()
	}
	b.StopTimer()
	acked, lost := finishBench(b, pc, w, acks, true)
	st := pc.status()
	if st.Failovers != 0 {
		b.Errorf("%d failovers, want none", st.Failovers)
	}
	b.Logf("synchronous standbys %d: %d kills of the server, its instance manager alive; %d failovers; %d rows acknowledged, %d lost", sync, b.N, st.Failovers, len(acked), lost)
	reportDurations(b, fmt.Sprintf("kill -9 of the primary's server (synchronous standbys %d), recovered in place", sync), took)
	b.ReportMetric(float64(lost), "lost-rows")
}
