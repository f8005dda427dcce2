package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	pginstance "github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
)

// The primary's processes are stopped (SIGSTOP) and its instance manager
// cut off from the API server, with synchronous replication: the runtime
// detaches the synchronous standbys and promotes the most advanced one
// without waiting for the old primary's lease (10s here). Thawed, the old
// primary runs on until its lease ends and acknowledges nothing; no
// acknowledged row is lost; healed, it rejoins.
func frozenPrimarySync(t *testing.T, cp *testbed.ControlPlane) {
	pc, ctx := setUp(t, cp, 3, 1, FailoverSettings{AfterTimeouts: 3 * time.Second}, 0)
	acks := pc.sampleAcks(ctx)
	w := startAckWriter(pc, 1)
	w.waitRows(pc, "rows written", 50)
	took, old := freezeAndWrite(pc, 1_000_000)
	t.Logf("SIGSTOP of pg-%d, cut off from the API server, to the first write through -rw: %s", old, took)
	detached, err := eventsWithReason(pc, ReasonStandbysDetached)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range detached {
		t.Logf("event %s: %s", ReasonStandbysDetached, m)
	}
	if len(detached) == 0 {
		t.Errorf("no %s event: the failover did not use the synchronous fence", ReasonStandbysDetached)
	}
	pc.signal(old, syscall.SIGCONT)
	// Its lease has not ended: it runs as a primary, and no standby
	// acknowledges its commits.
	for i := range 3 {
		if err := pc.m.writeTo(context.Background(), old, 2_000_000+i); err == nil {
			t.Fatalf("pg-%d acknowledged a write after pg-%d was promoted", old, pc.primary())
		}
	}
	before := w.count()
	w.waitRows(pc, "rows written after the failover", before+50)
	checkRows(t, pc, w.finish())
	pc.nodes[old].cut.Store(false)
	pc.waitFor("the old primary rejoins as a replica", pc.healthy)
	acks.check(t)
}

// freezeAndWrite stops the primary's processes and cuts its instance
// manager off from the API server, and returns the time from then to the
// first write through -rw, and the old primary. Its processes stay
// stopped and it stays cut off.
func freezeAndWrite(pc *pgCluster, id int) (time.Duration, int) {
	old := pc.primary()
	pc.nodes[old].cut.Store(true)
	pc.signal(old, syscall.SIGSTOP)
	start := time.Now()
	attempt := 0
	pc.waitFor("a write through -rw", func() error {
		if p := pc.primary(); p == old || p < 0 {
			return fmt.Errorf("primary pg-%d", p)
		}
		attempt++
		return pc.write(context.Background(), id+attempt<<20)
	})
	return time.Since(start), old
}

// thaw lets a frozen, cut off old primary go on and reach the API
// server, and waits until it is a replica again.
func thaw(pc *pgCluster, old int) {
	pc.signal(old, syscall.SIGCONT)
	pc.nodes[old].cut.Store(false)
	pc.waitFor("the old primary rejoins as a replica", pc.healthy)
}

// lostRows counts the acknowledged rows the primary does not have.
func lostRows(t testing.TB, pc *pgCluster, acked []int) int {
	t.Helper()
	got, err := pc.m.ids(pc.primary())
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, id := range acked {
		if !got[id] {
			lost++
		}
	}
	return lost
}

// sampleFor samples what a benchmark of sync synchronous standbys counts:
// the acknowledged writes (sampleAcks), or, asynchronously, the writers'.
func (pc *pgCluster) sampleFor(ctx context.Context, sync int) *writers {
	if sync > 0 {
		return pc.sampleAcks(ctx)
	}
	return pc.sampleWriters(ctx)
}

// sampleAcks counts, every 200ms, the members that acknowledge a write
// within a second: with synchronous replication an old primary may still
// answer as a primary, and must acknowledge nothing.
func (pc *pgCluster) sampleAcks(ctx context.Context) *writers {
	pc.m.exec(pc.primary(), "CREATE TABLE IF NOT EXISTS acks (id bigserial PRIMARY KEY, by text)")
	return pc.sample(ctx, 200*time.Millisecond, func(i int) bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		c, err := pc.m.dial(cctx, i)
		if err != nil {
			return false
		}
		defer c.Close(context.Background())
		_, err = c.Exec(cctx, "INSERT INTO acks (by) VALUES ($1)", fmt.Sprintf("pg-%d", i))
		return err == nil
	})
}

// sample counts, every interval until ctx ends, the members for which
// takes says yes, asking all at once, and keeps the most at once.
func (pc *pgCluster) sample(ctx context.Context, every time.Duration, takes func(ord int) bool) *writers {
	w := &writers{}
	go func() {
		for ctx.Err() == nil {
			n := 0
			var wg sync.WaitGroup
			var mu sync.Mutex
			for i := range pc.n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if takes(i) {
						mu.Lock()
						n++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			w.mu.Lock()
			w.samples++
			if n > w.worst {
				w.worst, w.at = n, time.Now()
			}
			w.mu.Unlock()
			time.Sleep(every)
		}
	}()
	return w
}

// BenchmarkPartitionSyncFrozen stops the primary's processes (SIGSTOP)
// and cuts its instance manager off from the API server b.N times
// (-benchtime 10x), with synchronous replication (FIRST 1 of 2 standbys)
// and a writer running throughout; it reports the time from the freeze
// to the first write acknowledged through -rw. Each time the old primary
// is thawed, healed and rejoins; no member but one ever acknowledges a
// write, and no acknowledged row is lost:
//
//	go test ./runtime/agent -run '^$' -bench PartitionSyncFrozen -benchtime 10x
func BenchmarkPartitionSyncFrozen(b *testing.B) {
	benchFrozen(b, 1, FailoverSettings{AfterTimeouts: 3 * time.Second})
}

// BenchmarkPartitionFrozen is BenchmarkPartitionSyncFrozen with
// asynchronous replication: the runtime detaches the replicas (the
// failsafe) and waits for the old primary's lease (10s) plus 3s after
// the later of its fence and the last detach, unless it finds the old
// primary stopped sooner (its own lease ran out, counted from before the
// freeze). It reports the acknowledged rows lost
// (those the replicas had not received when the primary froze):
//
//	go test ./runtime/agent -run '^$' -bench 'PartitionFrozen$' -benchtime 3x
func BenchmarkPartitionFrozen(b *testing.B) {
	benchFrozen(b, 0, FailoverSettings{AfterTimeouts: 3 * time.Second})
}

func benchFrozen(b *testing.B, sync int, settings FailoverSettings) {
	b.Logf("synchronous standbys %d, settings %+v (zero: the default)", sync, settings)
	pc, ctx, recorded := benchCluster(b, fmt.Sprintf("pgfrozen%d", sync), sync, settings)
	acks := pc.sampleFor(ctx, sync)
	w := startAckWriter(pc, 1)
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		d, old := freezeAndWrite(pc, 1_000_000+i)
		took = append(took, d)
		b.StopTimer()
		thaw(pc, old)
		pc.waitFor("a synchronous standby recorded", recorded)
		b.StartTimer()
	}
	b.StopTimer()
	acked, lost := finishBench(b, pc, w, acks, sync > 0)
	b.Logf("%d rows acknowledged, %d lost", len(acked), lost)
	mode := "asynchronous"
	if sync > 0 {
		mode = "synchronous"
	}
	reportDurations(b, "SIGSTOP and cut off from the API server, "+mode, took)
	b.ReportMetric(float64(lost), "lost-rows")
}

// benchCluster starts a cluster of three for a benchmark, with sync
// synchronous standbys, two runtime replicas at their default pass
// interval, and table t; recorded says whether the runtime has recorded
// the primary's synchronous standbys and setting (always, with none).
func benchCluster(b *testing.B, name string, sync int, settings FailoverSettings) (*pgCluster, context.Context, func() error) {
	return benchClusterWith(b, name, sync, settings, nil)
}

// benchClusterWith is benchCluster whose members' instance managers
// member changes before they run (nil: none).
func benchClusterWith(b *testing.B, name string, sync int, settings FailoverSettings, member func(*pginstance.Manager)) (*pgCluster, context.Context, func() error) {
	cp := testbed.Start(b)
	pc := newPgCluster(b, cp, cp.Namespace(b, fmt.Sprintf("%s-%d", name, b.N)), 3, 0)
	pc.interval = 0 // the runtime's default, 500ms
	pc.member = member
	pc.start()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	if sync > 0 {
		setSync(b, pc, sync)
	}
	for _, id := range []string{"runtime-a", "runtime-b"} {
		pc.runtime(ctx, id, settings, nil)
	}
	recorded := func() error {
		if st := pc.status(); sync > 0 && (len(st.Synchronous) == 0 || st.SyncSetting == "") {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	}
	pc.waitFor("healthy", pc.healthy)
	pc.createTable()
	pc.waitFor("a synchronous standby recorded", recorded)
	return pc, ctx, recorded
}

// finishBench stops the writer and checks what the samplers saw; with
// noLoss, an acknowledged row the primary lacks fails the benchmark.
func finishBench(b *testing.B, pc *pgCluster, w *ackWriter, acks *writers, noLoss bool) ([]int, int) {
	b.Helper()
	acked := w.finish()
	lost := lostRows(b, pc, acked)
	acks.check(b)
	if noLoss && lost > 0 {
		b.Errorf("%d of %d acknowledged rows lost", lost, len(acked))
	}
	return acked, lost
}

// setSync renders n synchronous standbys for cluster pg.
func setSync(t testing.TB, pc *pgCluster, n int) {
	t.Helper()
	if _, err := pc.c.CoreV1().ConfigMaps(pc.ns).Create(context.Background(), syncConfigMap(n), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// reportDurations reports p50, p95 and max of took.
func reportDurations(b *testing.B, what string, took []time.Duration) {
	slices.Sort(took)
	pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	b.ReportMetric(pct(0.5).Seconds(), "p50-s")
	b.ReportMetric(pct(0.95).Seconds(), "p95-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "max-s")
	b.Logf("%s, to the first write through -rw over %d runs: p50 %s, p95 %s, max %s", what, len(took), pct(0.5), pct(0.95), took[len(took)-1])
}

// BenchmarkFailoverWithLeader kills the primary (kill -9) and, at the
// same moment, stops the runtime replica that leads, its Lease not
// released (as when the node both ran on is lost), b.N times for each
// leader Lease (-benchtime 5x): the other replica takes the Lease over
// once it expires, then fails over. A new runtime replica replaces the
// stopped one each time; the old primary rejoins; never two members take
// writes:
//
//	go test ./runtime/agent -run '^$' -bench FailoverWithLeader -benchtime 5x
func BenchmarkFailoverWithLeader(b *testing.B) {
	cp := testbed.Start(b)
	for _, lease := range []time.Duration{15 * time.Second, agent.DefaultLeaderLease} {
		b.Run(fmt.Sprintf("lease=%s", lease), func(b *testing.B) {
			pc := newPgCluster(b, cp, cp.Namespace(b, fmt.Sprintf("pgleader%d-%d", int(lease.Seconds()), b.N)), 3, 0)
			pc.interval, pc.leaderLease = 0, lease
			pc.start()
			stops := map[string]context.CancelFunc{}
			defer func() {
				for _, stop := range stops {
					stop()
				}
			}()
			spawn := func() {
				id := fmt.Sprintf("runtime-%d", len(pc.metrics))
				ctx, cancel := context.WithCancel(context.Background())
				stops[id] = cancel
				pc.runtime(ctx, id, FailoverSettings{}, nil)
			}
			spawn()
			spawn()
			pc.waitFor("healthy", pc.healthy)
			pc.createTable()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := pc.sampleWriters(ctx)
			var took []time.Duration
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				var leader string
				pc.waitFor("a leader", func() error {
					l, err := pc.c.CoordinationV1().Leases(pc.ns).Get(context.Background(), contract.Runtime("pg"), metav1.GetOptions{})
					if err != nil || l.Spec.HolderIdentity == nil || stops[*l.Spec.HolderIdentity] == nil {
						return fmt.Errorf("lease %v", err)
					}
					leader = *l.Spec.HolderIdentity
					return nil
				})
				b.StartTimer()
				stops[leader]()
				delete(stops, leader)
				d, old := killAndWrite(pc, i)
				took = append(took, d)
				b.StopTimer()
				spawn()
				rejoin(pc, old)
				b.StartTimer()
			}
			b.StopTimer()
			w.check(b)
			reportDurations(b, fmt.Sprintf("kill -9 of the primary and the leading runtime, leader lease %s", lease), took)
		})
	}
}

// BenchmarkFailoverCycles fails over b.N times in a row (-benchtime
// 100x) on one cluster with synchronous replication, a writer running
// throughout: odd cycles kill the primary (kill -9), even ones stop its
// processes and cut it off from the API server. Each time the old
// primary rejoins as a replica; no member but one ever acknowledges a
// write, and no acknowledged row is lost. It reports the time to the
// first write through -rw of both kinds together:
//
//	go test ./runtime/agent -run '^$' -bench 'FailoverCycles$' -benchtime 100x -timeout 3h
func BenchmarkFailoverCycles(b *testing.B) { failoverCycles(b, 1) }

// BenchmarkFailoverCyclesAsync is the same with asynchronous
// replication: a freeze is failed over from by the failsafe's detach and
// the lease (10 s). No two members ever answer as primaries; the
// acknowledged rows lost (those no replica had received when the primary
// froze or died) are reported:
//
//	go test ./runtime/agent -run '^$' -bench 'FailoverCyclesAsync$' -benchtime 100x -timeout 3h
func BenchmarkFailoverCyclesAsync(b *testing.B) { failoverCycles(b, 0) }

func failoverCycles(b *testing.B, sync int) {
	pc, ctx, recorded := benchCluster(b, fmt.Sprintf("pgcycles%d", sync), sync, FailoverSettings{AfterTimeouts: 3 * time.Second})
	acks := pc.sampleFor(ctx, sync)
	w := startAckWriter(pc, 1)
	var kills, freezes []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			d, old := killAndWrite(pc, 1_000_000+i)
			kills = append(kills, d)
			b.StopTimer()
			rejoin(pc, old)
		} else {
			d, old := freezeAndWrite(pc, 1_000_000+i)
			freezes = append(freezes, d)
			b.StopTimer()
			thaw(pc, old)
		}
		pc.waitFor("a synchronous standby recorded", recorded)
		b.StartTimer()
	}
	b.StopTimer()
	acked, lost := finishBench(b, pc, w, acks, sync > 0)
	st := pc.status()
	b.Logf("synchronous standbys %d: %d cycles (%d kills, %d freezes), %d failovers recorded, %d rows acknowledged, %d lost", sync, b.N, len(kills), len(freezes), st.Failovers, len(acked), lost)
	if len(freezes) > 0 {
		reportDurations(b, "freezes", slices.Clone(freezes))
	}
	reportDurations(b, "kills and freezes", append(kills, freezes...))
	b.ReportMetric(float64(lost), "lost-rows")
}
