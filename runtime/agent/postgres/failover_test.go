package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	pginstance "github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
)

// The PostgreSQL runtime on real PostgreSQL 15 members run by their
// instance managers, each backing a pod of the test control plane, with
// two runtime replicas. One control plane serves every case.
func TestPostgresFailover(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	cp := testbed.Start(t)
	t.Run("kill -9 with synchronous replication loses no acknowledged row", func(t *testing.T) { killWithWriter(t, cp) })
	t.Run("repeated kills never make two primaries", func(t *testing.T) { killCycles(t, cp, 5) })
	t.Run("a stopped and cut off primary never takes a write after the promotion", func(t *testing.T) { stoppedPrimary(t, cp) })
	t.Run("synchronous: a stopped and cut off primary is failed over from without its lease, losing nothing", func(t *testing.T) { frozenPrimarySync(t, cp) })
	t.Run("a new leader finishes a half-done failover", func(t *testing.T) { leaderDiesMidFailover(t, cp) })
	t.Run("a planned switchover loses no committed row", func(t *testing.T) { switchover(t, cp) })
	t.Run("a loaded, stalling primary is not failed over", func(t *testing.T) { loadedPrimary(t, cp) })
	t.Run("the members' rendered Role lets a primary confirm its label", func(t *testing.T) { memberRole(t, cp) })
}

// A member's instance manager, as the rendered <cluster>-member
// ServiceAccount, reads its own pod's role label.
func memberRole(t *testing.T, cp *testbed.ControlPlane) {
	admin := cp.Client(t)
	ns := cp.Namespace(t, "pgrbac")
	testbed.ApplyRenderedRBAC(t, admin, ns, pgSpec)
	_, err := admin.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pg-0", Labels: map[string]string{contract.LabelRole: contract.RolePrimary}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "postgres", Image: "postgres:15"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cp.Config()
	cfg.Impersonate.UserName = "system:serviceaccount:" + ns + ":pg-member"
	member, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := pginstance.APIRoleLabel(member, ns, "pg-0")(context.Background()); err != nil || got != contract.RolePrimary {
		t.Fatalf("label %q, %v", got, err)
	}
}

// setUp starts n members and two runtime replicas and waits until the
// cluster is healthy with table t.
func setUp(t *testing.T, cp *testbed.ControlPlane, n int, sync int, s FailoverSettings, ttl time.Duration) (*pgCluster, context.Context) {
	return setUpOn(t, newPgCluster(t, cp, cp.Namespace(t, fmt.Sprintf("pg%d", time.Now().UnixNano()%1e9)), n, ttl), sync, s)
}

// setUpOn is setUp on the pods of pc.
func setUpOn(t *testing.T, pc *pgCluster, sync int, s FailoverSettings) (*pgCluster, context.Context) {
	if sync > 0 {
		setSync(t, pc, sync)
	}
	pc.start()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, id := range []string{"runtime-a", "runtime-b"} {
		pc.runtime(ctx, id, s, nil)
	}
	pc.waitFor("healthy", pc.healthy)
	pc.createTable()
	if sync > 0 {
		pc.waitFor("a synchronous standby recorded", func() error {
			if st := pc.status(); len(st.Synchronous) == 0 {
				return fmt.Errorf("status %+v", st)
			}
			return nil
		})
	}
	return pc, ctx
}

// createTable creates table t on the primary and waits until every
// member has it before a case kills anything: with asynchronous
// replication a kill right after the CREATE may lose it (the documented
// loss window), and the cases count rows, not DDL.
func (pc *pgCluster) createTable() {
	pc.m.exec(pc.primary(), "CREATE TABLE t (id int PRIMARY KEY)")
	pc.waitFor("every member has table t", func() error {
		for i := range pc.n {
			if _, err := pc.m.ids(i); err != nil {
				return fmt.Errorf("pg-%d: %v", i, err)
			}
		}
		return nil
	})
}

// syncConfigMap is cluster pg's rendered config with n synchronous
// standbys.
func syncConfigMap(n int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("pg")},
		Data: map[string]string{contract.KeyBootstrap: contract.BootstrapExisting, contract.KeySynchronousStandbys: fmt.Sprint(n)}}
}

// killAndWrite kills the primary and returns the time from the kill to
// the first write through the -rw address, and the old primary.
func killAndWrite(pc *pgCluster, id int) (time.Duration, int) {
	old := pc.primary()
	start := time.Now()
	pc.kill9(old)
	// Each attempt writes a row of its own: an attempt whose wait for a
	// synchronous standby was cut off by its timeout has committed
	// locally, unacknowledged, and the same ID again would collide.
	attempt := 0
	pc.waitFor("a write through -rw", func() error {
		attempt++
		return pc.write(context.Background(), id+attempt<<20)
	})
	return time.Since(start), old
}

// rejoin restarts the old primary and waits until it is a labelled,
// streaming replica.
func rejoin(pc *pgCluster, old int) {
	pc.run(old, "existing")
	pc.waitFor("the old primary rejoins as a replica", pc.healthy)
}

// ackWriter commits rows through -rw until stopped and keeps the IDs the
// server acknowledged.
type ackWriter struct {
	mu    sync.Mutex
	acked []int
	stop  chan struct{}
	done  chan struct{}
}

func startAckWriter(pc *pgCluster, from int) *ackWriter {
	w := &ackWriter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for id := from; ; id++ {
			select {
			case <-w.stop:
				return
			default:
			}
			if pc.write(context.Background(), id) == nil {
				w.mu.Lock()
				w.acked = append(w.acked, id)
				w.mu.Unlock()
			} else {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	return w
}

func (w *ackWriter) finish() []int {
	close(w.stop)
	<-w.done
	return w.acked
}

// waitRows waits until the writer has had at least n rows acknowledged.
func (w *ackWriter) waitRows(pc *pgCluster, what string, n int) {
	pc.t.Helper()
	pc.waitFor(what, func() error {
		if c := w.count(); c < n {
			return fmt.Errorf("%d rows", c)
		}
		return nil
	})
}

func (w *ackWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func checkRows(t *testing.T, pc *pgCluster, acked []int) {
	t.Helper()
	lost := lostRows(t, pc, acked)
	t.Logf("%d rows acknowledged, %d lost", len(acked), lost)
	if lost > 0 {
		t.Errorf("%d acknowledged rows are not on the new primary", lost)
	}
}

func killWithWriter(t *testing.T, cp *testbed.ControlPlane) {
	pc, _ := setUp(t, cp, 3, 1, FailoverSettings{}, 0)
	w := startAckWriter(pc, 1)
	w.waitRows(pc, "rows written", 50)
	before := w.count()
	took, old := killAndWrite(pc, 1_000_000)
	t.Logf("kill -9 of pg-%d to the first write through -rw: %s", old, took)
	w.waitRows(pc, "rows written after the failover", before+50)
	checkRows(t, pc, w.finish())
	rejoin(pc, old)
	if st := pc.status(); st.Failovers != 1 || st.LastFailover == nil || st.LastFailover.From != fmt.Sprintf("pg-%d", old) {
		t.Errorf("status %+v", st)
	}
	evs, err := pc.c.CoreV1().Events(pc.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range evs.Items {
		reasons[e.Reason]++
	}
	if reasons[ReasonFailover] != 1 || reasons[ReasonPrimaryFenced] != 1 {
		t.Errorf("events %v", reasons)
	}
	if n := pc.failovers(); n != 1 {
		t.Errorf("cairn_postgres_failovers_total %v, want 1", n)
	}
}

func killCycles(t *testing.T, cp *testbed.ControlPlane, n int) {
	pc, ctx := setUp(t, cp, 3, 0, FailoverSettings{}, 0)
	w := pc.sampleWriters(ctx)
	for i := range n {
		took, old := killAndWrite(pc, i)
		t.Logf("cycle %d: kill -9 of pg-%d to the first write: %s", i, old, took)
		rejoin(pc, old)
	}
	w.check(t)
	if st := pc.status(); st.Failovers != n {
		t.Errorf("%d failovers recorded, want %d", st.Failovers, n)
	}
}

// The primary's processes are stopped (SIGSTOP) and its instance manager
// cannot reach the API server: the runtime waits for its lease before
// promoting, and by then it has stopped itself.
func stoppedPrimary(t *testing.T, cp *testbed.ControlPlane) {
	ttl := 4 * time.Second
	pc, ctx := setUp(t, cp, 3, 0, FailoverSettings{AfterTimeouts: 3 * time.Second, LeaseTTL: ttl}, ttl)
	w := pc.sampleWriters(ctx)
	old := pc.primary()
	pc.nodes[old].cut.Store(true)
	pc.signal(old, syscall.SIGSTOP)
	pc.waitFor("another primary", func() error {
		if p := pc.primary(); p == old || p < 0 {
			return fmt.Errorf("primary pg-%d", p)
		}
		return pc.write(context.Background(), 1)
	})
	pc.signal(old, syscall.SIGCONT) // its server was killed by its own watchdog meanwhile
	for i := range 20 {
		if err := pc.m.writeTo(context.Background(), old, 100+i); err == nil {
			t.Fatalf("pg-%d took a write after pg-%d was promoted", old, pc.primary())
		}
		time.Sleep(100 * time.Millisecond)
	}
	pc.nodes[old].cut.Store(false)
	pc.waitFor("the old primary rejoins as a replica", pc.healthy)
	w.check(t)
}

// The leading runtime dies after recording a failover, before fencing:
// the other replica finishes it.
func leaderDiesMidFailover(t *testing.T, cp *testbed.ControlPlane) {
	ns := cp.Namespace(t, fmt.Sprintf("pg%d", time.Now().UnixNano()%1e9))
	pc := newPgCluster(t, cp, ns, 3, 0)
	pc.start()
	ctxA, killA := context.WithCancel(context.Background())
	defer killA()
	recorded := make(chan pgStatus, 1)
	pc.runtime(ctxA, "runtime-a", FailoverSettings{}, func(ctx context.Context, step string) {
		if step == "failover-recorded" {
			recorded <- pc.status()
			killA()
		}
	})
	pc.waitFor("healthy", pc.healthy)
	pc.createTable()
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	pc.runtime(ctxB, "runtime-b", FailoverSettings{}, nil)
	_, old := killAndWrite(pc, 1)
	st := <-recorded
	if st.Failover == nil || st.Failover.From != fmt.Sprintf("pg-%d", old) {
		t.Fatalf("recorded %+v", st)
	}
	pc.waitFor("the failover is finished", func() error {
		if s := pc.status(); s.Failover != nil || s.Failovers != 1 {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})
	evs, _ := pc.c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	started := 0
	for _, e := range evs.Items {
		if e.Reason == ReasonFailoverStarted && e.Message[:len("failing over")] == "failing over" {
			started++
		}
	}
	if started != 1 {
		t.Errorf("%d failovers started, want the one runtime-a recorded", started)
	}
	rejoin(pc, old)
}

func switchover(t *testing.T, cp *testbed.ControlPlane) {
	pc, _ := setUp(t, cp, 3, 0, FailoverSettings{}, 0)
	old := pc.primary()
	to := fmt.Sprintf("pg-%d", (old+1)%3)
	w := startAckWriter(pc, 1)
	w.waitRows(pc, "rows written", 50)
	_, err := pc.c.CoreV1().ConfigMaps(pc.ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("pg")},
		Data: map[string]string{contract.KeyBootstrap: contract.BootstrapExisting, contract.KeyRequestSwitchoverID: "switchover-1", contract.KeyRequestSwitchoverTo: to}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pc.waitFor("switched over", func() error {
		if s := pc.status(); s.SwitchoverDone != "switchover-1" || fmt.Sprintf("pg-%d", pc.primary()) != to {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})
	before := w.count()
	w.waitRows(pc, "rows written after the switchover", before+50)
	checkRows(t, pc, w.finish())
	pc.waitFor("the old primary follows", pc.healthy)
	if st := pc.status(); st.Failovers != 0 || st.LastSwitchover == nil {
		t.Errorf("status %+v", st)
	}
}

// A primary under CPU load whose server stalls (SIGSTOP) for 1.5s in
// every 3s answers late or not at all now and then, never for the 10s a
// failover needs. The issue asks for a minute; this runs 15s.
func loadedPrimary(t *testing.T, cp *testbed.ControlPlane) {
	pc, _ := setUp(t, cp, 2, 0, FailoverSettings{}, 0)
	p := pc.primary()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c, err := pc.m.dial(ctx, p); err == nil {
				_, _ = c.Exec(ctx, "SELECT count(*) FROM generate_series(1, 2000000000)")
				c.Close(context.Background())
			}
		}()
	}
	for ctx.Err() == nil {
		pc.signal(p, syscall.SIGSTOP)
		time.Sleep(1500 * time.Millisecond)
		pc.signal(p, syscall.SIGCONT)
		time.Sleep(1500 * time.Millisecond)
	}
	wg.Wait()
	if st := pc.status(); st.Failovers != 0 || st.Failover != nil || pc.primary() != p {
		t.Fatalf("failed over from a live primary: %+v", st)
	}
}

// BenchmarkFailover kills the primary b.N times (-benchtime 10x), the
// old primary rejoining each time and never two members taking writes,
// and reports the time from each kill to the first write through -rw:
//
//	go test ./runtime/agent -run '^$' -bench Failover -benchtime 10x
//
// Each kill is of the member's node, as it were: its instance manager
// and its server at once (kill9), so nothing restarts it in place
// (BenchmarkCrashRecovery kills the server alone).
func BenchmarkFailover(b *testing.B) { failoverBench(b, 0) }

// BenchmarkFailoverSync is BenchmarkFailover with one synchronous
// standby: beside BenchmarkCrashRecovery's sync=1, it is what a
// synchronous cluster would take to fail over instead of recovering in
// place.
func BenchmarkFailoverSync(b *testing.B) { failoverBench(b, 1) }

func failoverBench(b *testing.B, sync int) {
	cp := testbed.Start(b)
	ns := cp.Namespace(b, fmt.Sprintf("pgbench%d-%d", sync, b.N))
	pc := newPgCluster(b, cp, ns, 3, 0)
	pc.interval = 0 // the runtime's default, 500ms
	pc.start()
	if sync > 0 {
		setSync(b, pc, sync)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, id := range []string{"runtime-a", "runtime-b"} {
		pc.runtime(ctx, id, FailoverSettings{}, nil)
	}
	pc.waitFor("healthy", pc.healthy)
	pc.createTable()
	w := pc.sampleWriters(ctx)
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		d, old := killAndWrite(pc, i)
		took = append(took, d)
		b.StopTimer()
		rejoin(pc, old)
		b.StartTimer()
	}
	b.StopTimer()
	w.check(b)
	slices.Sort(took)
	pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	b.ReportMetric(pct(0.5).Seconds(), "p50-s")
	b.ReportMetric(pct(0.95).Seconds(), "p95-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "max-s")
	b.Logf("kill -9 to the first write through -rw over %d kills: p50 %s, p95 %s, max %s", len(took), pct(0.5), pct(0.95), took[len(took)-1])
}
