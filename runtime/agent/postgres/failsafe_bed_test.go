package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// The failsafe on real PostgreSQL 15 members run by their instance
// managers, with two runtime replicas. One control plane serves every
// case.
func TestPostgresFailsafe(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	cp := testbed.Start(t)
	t.Run("an API server outage does not stop a primary every member follows; a member lost with it does", func(t *testing.T) { apiOutage(t, cp) })
	t.Run("a member added while the primary cannot reach the API server is counted at once, and a frozen primary is failed over from", func(t *testing.T) { scaleDuringOutage(t, cp) })
}

// apiOutage cuts the primary's instance manager off from the API server
// for four of its leases: every member follows it, so it keeps its lease
// and takes every write through -rw. Then a replica dies: not every
// member follows, and it stops when its lease ends; the runtime fails
// over, and once healed the cluster is whole again.
func apiOutage(t *testing.T, cp *testbed.ControlPlane) {
	ttl := 4 * time.Second
	pc, ctx := setUp(t, cp, 3, 0, FailoverSettings{AfterTimeouts: 3 * time.Second, LeaseTTL: ttl}, ttl)
	old := pc.primary()
	waitFailsafe(pc, old, 3)
	w := pc.sampleWriters(ctx)
	pc.nodes[old].cut.Store(true)
	cutAt := time.Now()
	id, failed := 10, 0
	for time.Since(cutAt) < 4*ttl {
		id++
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := pc.write(wctx, id); err != nil {
			failed++
			t.Logf("write %d through -rw %s after the cut: %v", id, time.Since(cutAt).Round(time.Millisecond), err)
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
	if failed > 0 {
		t.Errorf("%d of %d writes through -rw failed while only the API server was out of the primary's reach", failed, id-10)
	}
	if p, st := pc.primary(), pc.status(); p != old || st.Failovers != 0 || st.Failover != nil {
		t.Fatalf("the primary was pg-%d, is pg-%d; failovers %d, under way %+v", old, p, st.Failovers, st.Failover)
	}
	t.Logf("pg-%d kept its lease for %s without the API server, %d writes acknowledged", old, time.Since(cutAt).Round(time.Millisecond), id-10)

	lost := (old + 1) % 3
	lostAt := time.Now()
	pc.kill9(lost)
	pc.waitFor("the primary stops once not every member follows", func() error {
		id++
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := pc.m.writeTo(wctx, old, id); err == nil {
			return fmt.Errorf("pg-%d still takes writes", old)
		}
		return nil
	})
	t.Logf("pg-%d stopped taking writes %s after pg-%d died (lease %s)", old, time.Since(lostAt).Round(time.Millisecond), lost, ttl)
	pc.waitFor("another primary takes writes", func() error {
		if p := pc.primary(); p == old || p < 0 {
			return fmt.Errorf("primary pg-%d", p)
		}
		id++
		return pc.write(ctx, id)
	})
	pc.nodes[old].cut.Store(false)
	pc.run(lost, "existing")
	pc.waitFor("the cluster is whole again", pc.healthy)
	w.check(t)
}

// scaleDuringOutage grows a cluster from three members to four while its
// primary cannot reach the API server: the runtime writes the new member
// list on the primary itself, which counts the new member from then on
// and keeps its lease once it streams. The primary is then frozen: the
// runtime detaches the three replicas, waits the lease from the last
// detach, and promotes; the old primary never takes a write after that,
// and rejoins when healed.
func scaleDuringOutage(t *testing.T, cp *testbed.ControlPlane) {
	ttl := 10 * time.Second
	ns := cp.Namespace(t, fmt.Sprintf("pg%d", time.Now().UnixNano()%1e9))
	pc := newPgCluster(t, cp, ns, 4, ttl)
	if err := pc.c.CoreV1().Pods(ns).Delete(context.Background(), "pg-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pc.n = 3
	pc.start()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, id := range []string{"runtime-a", "runtime-b"} {
		pc.runtime(ctx, id, FailoverSettings{AfterTimeouts: 3 * time.Second, LeaseTTL: ttl}, nil)
	}
	pc.waitFor("healthy", pc.healthy)
	pc.createTable()
	old := pc.primary()
	waitFailsafe(pc, old, 3)
	w := pc.sampleWriters(ctx)
	pc.nodes[old].cut.Store(true)
	cutAt := time.Now()

	addPod(t, pc.c, ns, pc.m, 3)
	pc.n = 4
	pc.run(3, "existing")
	waitFailsafe(pc, old, 4)
	pc.waitFor("the new member streams", pc.healthy)
	t.Logf("pg-3 added and streaming %s after pg-%d was cut off from the API server", time.Since(cutAt).Round(time.Millisecond), old)
	id := 10
	for until := time.Now().Add(2 * ttl); time.Now().Before(until); {
		id++
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := pc.write(wctx, id)
		cancel()
		if err != nil {
			t.Fatalf("write %d through -rw %s after the cut: %v", id, time.Since(cutAt).Round(time.Millisecond), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if p := pc.primary(); p != old {
		t.Fatalf("the primary was pg-%d, is pg-%d", old, p)
	}

	frozenAt := time.Now()
	pc.signal(old, syscall.SIGSTOP)
	pc.waitFor("another primary takes writes", func() error {
		if p := pc.primary(); p == old || p < 0 {
			return fmt.Errorf("primary pg-%d", p)
		}
		id++
		return pc.write(ctx, id)
	})
	took := time.Since(frozenAt)
	pc.waitFor("the failover recorded", func() error {
		if st := pc.status(); st.LastFailover == nil {
			return fmt.Errorf("status: %s", st.Message)
		}
		return nil
	})
	detached, err := eventsWithReason(pc, ReasonStandbysDetached)
	if err != nil {
		t.Fatal(err)
	}
	if len(detached) == 0 {
		t.Errorf("no %s event: the failover did not take the failsafe away", ReasonStandbysDetached)
	}
	t.Logf("SIGSTOP of pg-%d (cut off from the API server) to the first write through -rw: %s (lease %s); %s", old, took.Round(time.Millisecond), ttl, strings.Join(detached, "; "))
	pc.signal(old, syscall.SIGCONT)
	for i := range 10 {
		if err := pc.m.writeTo(context.Background(), old, 1<<24+i); err == nil {
			t.Fatalf("pg-%d took a write after pg-%d was promoted", old, pc.primary())
		}
		time.Sleep(100 * time.Millisecond)
	}
	pc.nodes[old].cut.Store(false)
	pc.waitFor("the old primary rejoins as a replica", pc.healthy)
	w.check(t)
}

// waitFailsafe waits until the status records one failsafe list, naming
// pg-old with members members, and pg-old reports it.
func waitFailsafe(pc *pgCluster, old, members int) {
	pc.t.Helper()
	pc.waitFor("the primary's failsafe recorded with "+strconv.Itoa(members)+" members", func() error {
		st := pc.status()
		if len(st.FailsafeSets) != 1 {
			return fmt.Errorf("failsafe lists %q", st.FailsafeSets)
		}
		f, _, err := contract.ParseFailsafe(st.FailsafeSets[0])
		if err != nil || f.Primary != "pg-"+strconv.Itoa(old) || len(f.Members) != members {
			return fmt.Errorf("failsafe list %q (%v)", st.FailsafeSets[0], err)
		}
		return nil
	})
}

// eventsWithReason lists the messages of the namespace's Events with
// that reason.
func eventsWithReason(pc *pgCluster, reason string) ([]string, error) {
	evs, err := pc.c.CoreV1().Events(pc.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range evs.Items {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out, nil
}
