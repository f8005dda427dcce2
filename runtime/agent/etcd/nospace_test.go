package etcd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// TestEtcdNoSpaceIsCompactedDefragmentedAndDisarmed: three real members
// with a 4 MiB space quota are written to until etcd raises NOSPACE and
// refuses writes. The runtime then compacts (revision mode, keeping 10
// revisions), defragments the members one at a time, followers first,
// disarms the alarm, and writes succeed again; the alarm is an Event and
// a metric when raised and when cleared.
//
// No two defragmentations at once is checked two ways. The runtime's
// onDefrag hook brackets each Defragment call exactly, so every
// defragmentation is seen and their intervals must not overlap; and,
// independently of the runtime's own bookkeeping, a sampler asks every
// member's /metrics for etcd's etcd_disk_defrag_inflight gauge, all
// members at once every few milliseconds, and no sample may find two
// members defragmenting. The sampler sees what the members do, but a
// defragmentation of a few MiB takes milliseconds and may fall between
// samples; the hook sees every one, but only as the runtime calls it.
// Together: every defragmentation is bracketed, and the members agree.
func TestEtcdNoSpaceIsCompactedDefragmentedAndDisarmed(t *testing.T) {
	const quota = 4 << 20
	b := newEtcdBed(t, 3, func(b *etcdBed) { b.quota = quota })
	b.config(map[string]string{contract.KeyBootstrap: contract.BootstrapExisting,
		contract.KeyEtcdCompactionMode: contract.EtcdCompactionRevision, contract.KeyEtcdCompactionRetention: "10",
		contract.KeyEtcdQuotaBackendBytes: strconv.Itoa(quota)})
	cli := b.etcd()

	// Fill the database before the runtime runs: 64 KiB values over 8
	// keys, every revision kept, until etcd refuses a write.
	value := strings.Repeat("x", 64<<10)
	acked := 0
	for ; ; acked++ {
		if acked > 1000 {
			t.Fatalf("no NOSPACE after %d writes", acked)
		}
		cctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		_, err := cli.Put(cctx, "k"+strconv.Itoa(acked%8), value)
		cancel()
		if errors.Is(rpctypes.Error(err), rpctypes.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatalf("write %d: %v", acked, err)
		}
	}
	alarms, err := cli.AlarmList(b.ctx)
	if err != nil || len(alarms.Alarms) == 0 {
		t.Fatalf("alarms after %d writes: %v %v", acked, alarms, err)
	}
	t.Logf("NOSPACE after %d writes, on %d member(s)", acked, len(alarms.Alarms))

	sampler := b.sampleDefrags()
	var mu sync.Mutex
	type defrag struct {
		member, leader string
		start, end     time.Time
	}
	var defrags []defrag
	b.members.onDefrag = func(member string, running bool) {
		mu.Lock()
		defer mu.Unlock()
		if !running {
			defrags[len(defrags)-1].end = time.Now()
			return
		}
		for _, d := range defrags {
			if d.end.IsZero() {
				t.Errorf("%s starts defragmenting while %s does", member, d.member)
			}
		}
		st := b.status()
		if len(defrags) == 0 {
			// What the last pass reported, with NOSPACE raised: a quorum
			// of healthy members, never a lost one; the alarm's gauge.
			healthy := 0
			for _, m := range st.Members {
				if m.Healthy && !m.Learner {
					healthy++
				}
			}
			if !st.Quorum || healthy != 3 || st.QuorumLostAt != "" {
				t.Errorf("while NOSPACE is raised: %+v", st)
			}
			if n := b.metric("cairn_etcd_alarms", contract.EtcdAlarmNoSpace); n < 1 {
				t.Errorf("cairn_etcd_alarms{alarm=NOSPACE} = %v while raised", n)
			}
		}
		leader := ""
		for _, m := range st.Members {
			if m.Leader {
				leader = m.Name
			}
		}
		defrags = append(defrags, defrag{member: member, leader: leader, start: time.Now()})
	}
	b.run()

	var report contract.EtcdMaintenanceStatus
	testbed.Eventually(t, "NOSPACE disarmed", func() error {
		report = b.maintenance()
		if len(report.Alarms) > 0 || report.LastDefrag == nil {
			return fmt.Errorf("report %+v", report)
		}
		if a, err := cli.AlarmList(b.ctx); err != nil || len(a.Alarms) > 0 {
			return fmt.Errorf("etcd lists %v %v", a, err)
		}
		return nil
	})
	cctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Put(cctx, "after", "nospace"); err != nil {
		t.Fatalf("a write after the disarm: %v", err)
	}
	samples, caught, busiest := sampler()

	mu.Lock()
	defer mu.Unlock()
	var order []string
	for i, d := range defrags {
		order = append(order, d.member)
		if i > 0 && d.start.Before(defrags[i-1].end) {
			t.Errorf("defragmentations overlap: %+v", defrags)
		}
	}
	if len(defrags) != 3 || len(slices.Compact(slices.Sorted(slices.Values(order)))) != 3 {
		t.Errorf("defragmented %v, want each member once", order)
	} else if last := defrags[2]; last.member != last.leader || defrags[0].member == defrags[0].leader || defrags[1].member == defrags[1].leader {
		t.Errorf("defragmented %v with leaders %+v: followers first, the leader last", order, defrags)
	}
	if busiest > 1 {
		t.Errorf("a sample found %d members defragmenting at once", busiest)
	}
	t.Logf("defragmented %v; %d samples of every member's etcd_disk_defrag_inflight, %d caught one defragmenting", order, samples, caught)
	if report.Compaction.Revision == 0 || report.Compaction.Mode != contract.EtcdCompactionRevision {
		t.Errorf("compaction %+v", report.Compaction)
	}
	for _, m := range report.Members {
		if m.DBSize*100 >= contract.EtcdDisarmBelowPercent*quota || m.Quota != quota {
			t.Errorf("member %+v after the disarm", m)
		}
	}

	// Each alarm raised and cleared once, as Events and metrics.
	reasons := b.reasons()
	count := func(r string) int {
		n := 0
		for _, x := range reasons {
			if x == r {
				n++
			}
		}
		return n
	}
	// Members raise NOSPACE each on its own: one more may raise it after
	// the list above was read, before the writes stopped reaching it.
	raised := count(contract.ReasonEtcdAlarmRaised)
	if raised < len(alarms.Alarms) || raised > 3 || count(contract.ReasonEtcdAlarmCleared) != raised || count(contract.ReasonEtcdDefragmented) != 3 {
		t.Errorf("events %v, want as many cleared as raised (at least %d, a member's once), 3 defragmented", reasons, len(alarms.Alarms))
	}
	testbed.Eventually(t, "alarm gauge cleared", func() error {
		if n := b.metric("cairn_etcd_alarms", contract.EtcdAlarmNoSpace); n != 0 {
			return fmt.Errorf("cairn_etcd_alarms{alarm=NOSPACE} = %v", n)
		}
		return nil
	})
	if n := b.metric("cairn_etcd_maintenance_total", "defrag"); n != 3 {
		t.Errorf("defragmentations counted: %v", n)
	}
	if b.metric("cairn_etcd_maintenance_total", "compact") < 1 || b.metric("cairn_etcd_maintenance_total", "disarm") != float64(raised) {
		t.Errorf("compactions %v, disarms %v", b.metric("cairn_etcd_maintenance_total", "compact"), b.metric("cairn_etcd_maintenance_total", "disarm"))
	}
	for _, err := range b.passErrors() {
		t.Errorf("pass: %v", err)
	}
}

// config writes the rendered ConfigMap e-cairn.
func (b *etcdBed) config(data map[string]string) {
	b.t.Helper()
	cms := b.kube.CoreV1().ConfigMaps(b.ns)
	cm, err := cms.Get(b.ctx, contract.ConfigMap("e"), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(b.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("e")}, Data: data}, metav1.CreateOptions{})
	} else if err == nil {
		cm.Data = data
		_, err = cms.Update(b.ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		b.t.Fatal(err)
	}
}

// maintenance is the runtime's maintenance report; empty before the first.
func (b *etcdBed) maintenance() contract.EtcdMaintenanceStatus {
	b.t.Helper()
	cm, err := b.kube.CoreV1().ConfigMaps(b.ns).Get(b.ctx, contract.StatusConfigMap("e"), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return contract.EtcdMaintenanceStatus{}
	}
	if err != nil {
		b.t.Fatal(err)
	}
	st, err := contract.ParseEtcdMaintenanceStatus(cm.Data[contract.StatusKeyEtcdMaintenance])
	if err != nil {
		b.t.Fatal(err)
	}
	return st
}

// sampleDefrags asks every running member's /metrics for
// etcd_disk_defrag_inflight, all at once, until the returned function is
// called; that returns how many rounds were taken, how many found a
// member defragmenting, and the most members any round found so.
func (b *etcdBed) sampleDefrags() func() (rounds, caught, busiest int) {
	var urls []string
	for name := range b.procs {
		urls = append(urls, b.url(b.ip[name], b.cli[name])+"/metrics")
	}
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	var rounds, caught, busiest int
	go func() {
		defer close(done)
		client := &http.Client{Timeout: time.Second}
		for ctx.Err() == nil {
			inflight := make([]bool, len(urls))
			var wg sync.WaitGroup
			for i, u := range urls {
				wg.Go(func() { inflight[i] = defragInflight(ctx, client, u) })
			}
			wg.Wait()
			n := 0
			for _, f := range inflight {
				if f {
					n++
				}
			}
			rounds, busiest = rounds+1, max(busiest, n)
			if n > 0 {
				caught++
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	stop := func() (int, int, int) { cancel(); <-done; return rounds, caught, busiest }
	b.t.Cleanup(func() { stop() })
	return stop
}

// defragInflight reads etcd's etcd_disk_defrag_inflight gauge at url.
func defragInflight(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "etcd_disk_defrag_inflight "); ok {
			return strings.TrimSpace(v) == "1"
		}
	}
	return false
}
