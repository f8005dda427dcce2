package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// A primary stopped cleanly (its instance manager's context ends, as on
// SIGTERM to its pod) records its shutdown checkpoint, and the runtime
// promotes a replica that received it at once. --failover-after is set
// to a minute: a hand-over through the failover timer would say so in
// its reason, and the test fails on the reason, not on a time.
func TestPostgresCleanStop(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	t.Run("a clean stop of the primary hands over at once, no acknowledged row lost", func(t *testing.T) { cleanHandOverTest(t, cp) })
	t.Run("no replica received the final WAL: no early promotion", func(t *testing.T) { cleanStopNotReceived(t, cp) })
}

// cleanStop stops member ord's instance manager as SIGTERM to its pod
// does (its context ends: a fast shutdown, then it returns).
func (pc *pgCluster) cleanStop(ord int) {
	nd := pc.nodes[ord]
	nd.cancel()
	pc.awaitExit(ord, nd)
	pc.nodes[ord] = nil
}

// stopAndWrite stops the primary cleanly (or kills it, kill9) and returns
// the time to the first write through the -rw address.
func stopAndWrite(pc *pgCluster, id int, kill9 bool) (time.Duration, int) {
	old := pc.primary()
	start := time.Now()
	if kill9 {
		pc.kill9(old)
	} else {
		pc.cleanStop(old)
	}
	attempt := 0
	pc.waitFor("a write through -rw", func() error {
		attempt++
		if p := pc.primary(); p == old || p < 0 {
			return fmt.Errorf("primary pg-%d", p)
		}
		return pc.write(context.Background(), id+attempt<<20)
	})
	return time.Since(start), old
}

func (pc *pgCluster) stopRecord(member string) string {
	cm, err := pc.c.CoreV1().ConfigMaps(pc.ns).Get(context.Background(), contract.StopsConfigMap("pg"), metav1.GetOptions{})
	if err != nil {
		pc.t.Fatal(err)
	}
	return cm.Data[member]
}

func cleanHandOverTest(t *testing.T, cp *testbed.ControlPlane) {
	pc, ctx := setUp(t, cp, 3, 0, FailoverSettings{After: time.Minute}, 0)
	w := pc.sampleWriters(ctx)
	acks := startAckWriter(pc, 1)
	acks.waitRows(pc, "rows written", 50)
	took, old := stopAndWrite(pc, 1_000_000, false)
	t.Logf("clean stop of pg-%d to the first write through -rw: %s", old, took)
	before := acks.count()
	acks.waitRows(pc, "rows written after the hand-over", before+50)
	checkRows(t, pc, acks.finish())
	st := pc.failedOver()
	if !strings.Contains(st.LastFailover.Reason, "stopped cleanly") || st.LastFailover.From != fmt.Sprintf("pg-%d", old) {
		t.Errorf("last failover %+v: not the clean stop's hand-over", st.LastFailover)
	}
	if rec := pc.stopRecord(fmt.Sprintf("pg-%d", old)); rec == "" {
		t.Errorf("no clean stop recorded for pg-%d", old)
	}
	rejoin(pc, old)
	w.check(t)
	if rec := pc.stopRecord(fmt.Sprintf("pg-%d", old)); rec != "" {
		t.Errorf("pg-%d started again and its clean stop is still recorded: %s", old, rec)
	}
}

// The replicas' WAL receivers are stopped (primary_conninfo emptied),
// rows are written, then the primary stops cleanly: its final LSN is
// past what any replica received, so the runtime waits for
// --failover-after (3s here) and fails over as from any primary that is
// down.
func cleanStopNotReceived(t *testing.T, cp *testbed.ControlPlane) {
	pc, _ := setUp(t, cp, 3, 0, FailoverSettings{After: 3 * time.Second}, 0)
	old := pc.primary()
	for i := range pc.n {
		if i != old {
			pc.m.exec(i, "ALTER SYSTEM SET primary_conninfo = ''")
			pc.m.exec(i, "SELECT pg_reload_conf()")
		}
	}
	pc.waitFor("no replica streams", func() error {
		for _, m := range pc.status().Members {
			if m.Answer == "streaming replica" {
				return fmt.Errorf("%s streams", m.Name)
			}
		}
		return nil
	})
	for id := range 20 {
		if err := pc.m.writeTo(context.Background(), old, id); err != nil {
			t.Fatal(err)
		}
	}
	pc.cleanStop(old)
	if rec := pc.stopRecord(fmt.Sprintf("pg-%d", old)); rec == "" {
		t.Fatalf("no clean stop recorded for pg-%d", old)
	}
	st := pc.failedOver()
	if strings.Contains(st.LastFailover.Reason, "stopped cleanly") || !strings.Contains(st.LastFailover.Reason, "is down for") {
		t.Errorf("last failover %+v: want the failover timer's, not a hand-over", st.LastFailover)
	}
}

// BenchmarkCleanStop stops the primary b.N times (-benchtime 10x) with a
// writer running, asynchronous replication, side by side: "clean" ends
// its instance manager as SIGTERM to its pod does (a fast shutdown; the
// shutdown checkpoint recorded and handed over at once), "kill9" kills
// it and its server as the loss of its node does (a failover after
// --failover-after, 2s). It reports the time from each stop to the first
// write through -rw (p50, p95, max) and the acknowledged rows lost; a
// clean stop that loses any fails it:
//
//	go test ./runtime/agent/postgres -run '^$' -bench '^BenchmarkCleanStop$' -benchtime 10x
func BenchmarkCleanStop(b *testing.B) {
	for _, kill9 := range []bool{false, true} {
		name := "clean"
		if kill9 {
			name = "kill9"
		}
		b.Run(name, func(b *testing.B) { cleanStopBench(b, name, kill9) })
	}
}

func cleanStopBench(b *testing.B, name string, kill9 bool) {
	pc, ctx, _ := benchClusterWith(b, "pgstop"+name, 0, FailoverSettings{}, nil)
	acks := pc.sampleFor(ctx, 0)
	w := startAckWriter(pc, 1)
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		d, old := stopAndWrite(pc, 1_000_000+i, kill9)
		took = append(took, d)
		b.StopTimer()
		rejoin(pc, old)
		pc.waitReplicated(pc.primary(), 2_000_000+i)
		b.StartTimer()
	}
	b.StopTimer()
	acked, lost := finishBench(b, pc, w, acks, !kill9)
	st := pc.status()
	b.Logf("%s: %d stops of the primary; %d failovers recorded; %d rows acknowledged, %d lost", name, b.N, st.Failovers, len(acked), lost)
	reportDurations(b, name+" stop of the primary", took)
	b.ReportMetric(float64(lost), "lost-rows")
}
