package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdinstance "github.com/cairn-dev/cairn/runtime/instance/etcd"
	"github.com/cairn-dev/cairn/testbed"
)

// writer writes to the cluster throughout a test and measures how long
// writes failed at a stretch.
type writer struct {
	mu       sync.Mutex
	writes   int
	failures int
	longest  time.Duration
	stop     func()
}

func startWriter(t *testing.T, cli *clientv3.Client) *writer {
	w := &writer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w.stop = func() { cancel(); <-done }
	t.Cleanup(w.stop)
	go func() {
		defer close(done)
		var since time.Time // start of the failing stretch
		for i := 0; ctx.Err() == nil; i++ {
			start := time.Now()
			cctx, ccancel := context.WithTimeout(ctx, time.Second)
			_, err := cli.Put(cctx, "k"+strconv.Itoa(i%100), strconv.Itoa(i))
			ccancel()
			w.mu.Lock()
			switch {
			case ctx.Err() != nil:
			case err != nil:
				w.failures++
				if since.IsZero() {
					since = start
				}
			default:
				w.writes++
				if !since.IsZero() {
					w.longest = max(w.longest, time.Since(since))
					since = time.Time{}
				}
			}
			w.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return w
}

func (w *writer) report(t *testing.T) {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("writer: %d writes, %d failed, longest outage %s", w.writes, w.failures, w.longest)
	if w.writes == 0 {
		t.Fatal("no write succeeded")
	}
}

func (b *etcdBed) isLearner(name string) (bool, bool) {
	for _, m := range b.status().Members {
		if m.Name == name {
			return m.Learner, true
		}
	}
	return false, false
}

// 3 -> 5: each new member joins as a learner, is not promoted while its
// pod is not ready, is promoted once it is, and only then does the next
// one join; at the end every member is a healthy voter.
func TestScaleOutOneLearnerAtATime(t *testing.T) {
	b := newEtcdBed(t, 3)
	b.run()
	b.waitStatus("three voters", healthyVoters(3))
	w := startWriter(t, b.etcd())
	began := time.Now()
	for n := 3; n < 5; n++ {
		name := "e-" + strconv.Itoa(n)
		b.statefulSet(n + 1)
		b.claim(name)
		b.pod(name, false) // started, not ready yet
		b.start(name)
		b.waitStatus(name+" is a learner", func(etcdStatus) error {
			if l, ok := b.isLearner(name); !ok || !l {
				return errors.New("not a learner yet")
			}
			return nil
		})
		b.waitPasses(3)
		if l, _ := b.isLearner(name); !l {
			t.Fatalf("%s was promoted while its pod was not ready", name)
		}
		b.pod(name, true)
		at := time.Now()
		b.waitStatus(name+" is a voter", func(etcdStatus) error {
			if l, ok := b.isLearner(name); !ok || l {
				return errors.New("not a voter yet")
			}
			return nil
		})
		t.Logf("%s promoted %s after its pod became ready", name, time.Since(at).Round(time.Millisecond))
	}
	b.waitStatus("five healthy voters", healthyVoters(5))
	t.Logf("3 -> 5 took %s", time.Since(began).Round(time.Millisecond))
	w.report(t)
	if got := b.reasons(); !slices.Equal(got, []string{ReasonMemberAdded, ReasonMemberPromoted, ReasonMemberAdded, ReasonMemberPromoted}) {
		t.Errorf("events %v", got)
	}
	if v := b.metric("cairn_etcd_members", "voter"); v != 5 {
		t.Errorf("cairn_etcd_members{role=voter} %v", v)
	}
	if v := b.metric("cairn_etcd_membership_changes_total", "promote"); v != 2 {
		t.Errorf("promotions counted %v", v)
	}
	t.Logf("pass errors: %v", b.passErrors())
}

// 5 -> 3 where the first member removed leads: leadership moves to
// another member first, the member is removed, and only then does the
// status say it is gone; its instance manager does not re-add it.
func TestScaleInMovesLeadershipFirst(t *testing.T) {
	b := newEtcdBed(t, 5)
	b.run()
	st := b.waitStatus("five voters", healthyVoters(5))
	e4 := st.Members[slices.IndexFunc(st.Members, func(m etcdMember) bool { return m.Name == "e-4" })]
	moveLeaderTo(t, b, e4.ID)
	b.waitStatus("e-4 leads", func(st etcdStatus) error {
		if i := slices.IndexFunc(st.Members, func(m etcdMember) bool { return m.Leader }); i < 0 || st.Members[i].Name != "e-4" {
			return errors.New("e-4 does not lead")
		}
		return nil
	})
	w := startWriter(t, b.etcd())
	began := time.Now()
	for _, n := range []int{4, 3} {
		name, id := "e-"+strconv.Itoa(n), "etcd-remove-"+strconv.Itoa(n)
		b.requestRemoval(id, name)
		b.waitStatus(name+" removed", func(st etcdStatus) error {
			if slices.ContainsFunc(st.Members, func(m etcdMember) bool { return m.Name == name }) || st.RemoveDone != id {
				return fmt.Errorf("%s still a member, remove done %q", name, st.RemoveDone)
			}
			return nil
		})
		if _, err := b.manager(name, "existing").Args(context.Background()); !errors.Is(err, etcdinstance.ErrRemoving) {
			t.Fatalf("%s's instance manager: %v, want ErrRemoving", name, err)
		}
		b.kill(name) // the scale-in step's PR: the StatefulSet shrinks
		b.deletePod(name)
		b.statefulSet(n)
	}
	b.waitStatus("three healthy voters", healthyVoters(3))
	t.Logf("5 -> 3 took %s", time.Since(began).Round(time.Millisecond))
	w.report(t)
	// e-4 led: leadership moved away from it before its removal. The
	// voter furthest ahead may be e-3, which then hands over in turn.
	evs, moves := b.events(), 0
	b.reasons()
	for len(evs) > 0 && evs[0].Reason == ReasonLeaderMoved {
		moves++
		evs = evs[1:]
	}
	if all := b.events(); moves != 1 || !strings.Contains(all[0].Message, "from e-4") ||
		len(evs) < 1 || evs[0].Reason != ReasonMemberRemoved || !strings.Contains(evs[0].Message, "removed e-4") {
		t.Fatalf("leadership did not move away from e-4 once before its removal")
	}
	if evs = evs[1:]; len(evs) > 0 && evs[0].Reason == ReasonLeaderMoved {
		moves++
		evs = evs[1:]
	}
	if len(evs) != 1 || evs[0].Reason != ReasonMemberRemoved || !strings.Contains(evs[0].Message, "removed e-3") {
		t.Fatalf("e-3 was not removed next")
	}
	if v := b.metric("cairn_etcd_membership_changes_total", "move-leader"); v != float64(moves) {
		t.Errorf("leader moves counted %v, events %d", v, moves)
	}
	if v := b.metric("cairn_etcd_membership_changes_total", "remove"); v != 2 {
		t.Errorf("removals counted %v", v)
	}
	t.Logf("pass errors: %v", b.passErrors())
}

func moveLeaderTo(t *testing.T, b *etcdBed, hexID string) {
	id, _ := strconv.ParseUint(hexID, 16, 64)
	testbed.Eventually(t, "leadership moved by hand", func() error {
		for _, ep := range b.clientURLs()[:5] {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop()})
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err = c.MoveLeader(ctx, id)
			cancel()
			c.Close()
			if err == nil {
				return nil
			}
		}
		return errors.New("no member moved leadership")
	})
}

// A member's claim is replaced (its volume is lost): its pod restarts
// with an empty data directory; the runtime removes the member, the
// instance manager then re-adds it as a learner, and the runtime promotes
// it. Quorum holds throughout.
func TestReplacedClaimIsReplaced(t *testing.T) {
	b := newEtcdBed(t, 3)
	b.run()
	before := b.waitStatus("three voters", healthyVoters(3))
	w := startWriter(t, b.etcd())
	began := time.Now()
	b.kill("e-2")
	b.deletePod("e-2")
	b.pod("e-2", false)
	newClaim := b.replaceClaim("e-2")
	if err := os.RemoveAll(filepath.Join(b.dir, "e-2")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.manager("e-2", "existing").Args(context.Background()); !errors.Is(err, etcdinstance.ErrDataLost) && !errors.Is(err, etcdinstance.ErrNoCluster) {
		t.Fatalf("e-2 with no data, still a member: %v, want ErrDataLost", err)
	}
	b.waitStatus("e-2 is being replaced", func(st etcdStatus) error {
		if !slices.Contains(st.Replacing, "e-2") {
			return fmt.Errorf("replacing %v, message %q", st.Replacing, st.Message)
		}
		return nil
	})
	b.start("e-2") // joins as a learner
	b.pod("e-2", true)
	after := b.waitStatus("three healthy voters again", healthyVoters(3))
	t.Logf("replacement took %s", time.Since(began).Round(time.Millisecond))
	w.report(t)
	i := slices.IndexFunc(after.Members, func(m etcdMember) bool { return m.Name == "e-2" })
	j := slices.IndexFunc(before.Members, func(m etcdMember) bool { return m.Name == "e-2" })
	if after.Members[i].ClaimUID != newClaim || after.Members[i].ID == before.Members[j].ID || len(after.Replacing) != 0 {
		t.Errorf("e-2 after its replacement: %+v (before %+v)", after.Members[i], before.Members[j])
	}
	// A pass writes its status before it records its Events: the
	// promotion's Event may follow the healthy status it caused.
	want := []string{ReasonMemberReplaced, ReasonMemberAdded, ReasonMemberPromoted}
	testbed.Eventually(t, "the replacement's Events", func() error {
		if got := b.reasons(); !slices.Equal(got, want) {
			return fmt.Errorf("events %v, want %v (no quorum lost)", got, want)
		}
		return nil
	})
	t.Logf("pass errors: %v", b.passErrors())
}

// Two of three members are killed: quorum is lost. The runtime takes no
// action, says so in its status (the members it knew, none healthy or
// leading) and records one QuorumLost Event; when the members come back,
// one QuorumRestored.
func TestQuorumLossTakesNoAction(t *testing.T) {
	b := newEtcdBed(t, 3)
	b.run()
	before := b.waitStatus("three voters", healthyVoters(3))
	b.kill("e-1")
	b.kill("e-2")
	lost := b.waitStatus("quorum lost", func(st etcdStatus) error {
		if st.Quorum {
			return errors.New("quorum still reported")
		}
		return nil
	})
	b.waitPasses(2) // a pass without quorum waits out the members that do not answer
	lost = *b.status()
	t.Logf("status without quorum: %q", lost.Message)
	for _, m := range lost.Members {
		if m.Healthy || m.Leader {
			t.Errorf("member %+v", m)
		}
	}
	if len(lost.Members) != 3 || lost.QuorumLostAt == "" {
		t.Errorf("status %+v", lost)
	}
	if v := b.metric("cairn_etcd_quorum", ""); v != 0 {
		t.Errorf("cairn_etcd_quorum %v", v)
	}
	if got := b.reasons(); !slices.Equal(got, []string{ReasonQuorumLost}) {
		t.Errorf("events %v", got)
	}
	b.start("e-1")
	b.start("e-2")
	after := b.waitStatus("three healthy voters again", healthyVoters(3))
	for i, m := range after.Members {
		if m.ID != before.Members[i].ID {
			t.Errorf("membership changed: %+v, was %+v", after.Members, before.Members)
		}
	}
	// The pass records its Events after its status: wait for them.
	testbed.Eventually(t, "QuorumLost, then QuorumRestored", func() error {
		if got := b.reasons(); !slices.Equal(got, []string{ReasonQuorumLost, ReasonQuorumRestored}) {
			return fmt.Errorf("events %v", got)
		}
		return nil
	})
	t.Logf("pass errors: %v", b.passErrors())
}

// A learner whose pod the StatefulSet does not keep (here e-3 joins
// while the StatefulSet runs three: as a removed member's pod does when
// it re-adds itself before its scale-in deletes it) is removed, and the
// three voters stay.
func TestStrayLearnerIsRemoved(t *testing.T) {
	b := newEtcdBed(t, 3)
	b.run()
	b.waitStatus("three voters", healthyVoters(3))
	b.claim("e-3")
	b.pod("e-3", true)
	b.start("e-3") // joins as a learner
	b.waitStatus("e-3 gone again, three voters", func(st etcdStatus) error {
		if err := healthyVoters(3)(st); err != nil {
			return err
		}
		if _, ok := b.isLearner("e-3"); ok {
			return errors.New("e-3 is still a member")
		}
		if !slices.Contains(b.reasons(), ReasonMemberRemoved) {
			return errors.New("no removal recorded yet")
		}
		return nil
	})
	if got := b.reasons(); !slices.Equal(got, []string{ReasonMemberAdded, ReasonMemberRemoved}) {
		t.Errorf("events %v, want e-3 added and removed", got)
	}
}
