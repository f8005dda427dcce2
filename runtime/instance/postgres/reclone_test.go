package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/testbed"
)

// One check's verdict: a re-clone only when the replica's next segment is
// gone from the primary and the archive, never for a member out of
// recovery or ahead of the primary's timeline.
func TestJudgeWALGap(t *testing.T) {
	const seg = 16 << 20
	base := walPositions{InRecovery: true, Have: 3*seg + 100, ReplicaTLI: 1, PrimaryLSN: 9 * seg, PrimaryTLI: 1, Oldest: 5, SegmentSize: seg}
	for _, c := range []struct {
		name string
		edit func(w *walPositions)
		want gapVerdict
	}{
		{"gone", func(*walPositions) {}, walGone},
		{"gone across a failover", func(w *walPositions) { w.PrimaryTLI = 2 }, walGone},
		{"primary keeps it", func(w *walPositions) { w.Oldest = 3 }, noGap},
		{"archive holds it", func(w *walPositions) { w.Archived = "000000010000000000000003" }, noGap},
		{"caught up", func(w *walPositions) { w.Have = 9 * seg }, noGap},
		{"not in recovery", func(w *walPositions) { w.InRecovery = false }, notOurs},
		{"later timeline than the primary", func(w *walPositions) { w.ReplicaTLI = 2 }, notOurs},
		{"past its timeline's end", func(w *walPositions) {
			w.PrimaryTLI, w.TimelineEnd, w.EndKnown, w.Oldest = 2, 3*seg+50, true, 3
		}, forked},
		{"past its timeline's end and the primary's position", func(w *walPositions) {
			w.PrimaryTLI, w.TimelineEnd, w.EndKnown, w.PrimaryLSN = 2, 3*seg, true, 3*seg+10
		}, forked},
		{"at its timeline's end", func(w *walPositions) {
			w.PrimaryTLI, w.TimelineEnd, w.EndKnown, w.Oldest = 2, 3*seg+100, true, 3
		}, noGap},
		{"timeline not in the primary's history", func(w *walPositions) { w.PrimaryTLI, w.Oldest = 2, 3 }, noGap},
		{"on the primary's timeline", func(w *walPositions) { w.TimelineEnd, w.EndKnown, w.Oldest = 3*seg, true, 3 }, noGap},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := base
			c.edit(&w)
			if got, why := judge(w); got != c.want {
				t.Errorf("verdict %d (%s), want %d", got, why, c.want)
			}
		})
	}
}

// A gap is confirmed only by catchUpChecks checks in a row at one
// position, a fork by forkChecks.
func TestGapStreak(t *testing.T) {
	for _, c := range []struct {
		name  string
		seen  []gapVerdict
		haves []uint64
		want  bool
	}{
		{"confirmed", []gapVerdict{walGone, walGone, walGone, walGone}, []uint64{7, 7, 7, 7}, true},
		{"too few", []gapVerdict{walGone, walGone, walGone}, []uint64{7, 7, 7}, false},
		{"moving", []gapVerdict{walGone, walGone, walGone, walGone}, []uint64{7, 8, 8, 8}, false},
		{"interrupted", []gapVerdict{walGone, walGone, noGap, walGone, walGone}, []uint64{7, 7, 7, 7, 7}, false},
		{"after a reset", []gapVerdict{noGap, walGone, walGone, walGone, walGone}, []uint64{1, 7, 7, 7, 7}, true},
		{"forked", []gapVerdict{forked, forked}, []uint64{7, 7}, true},
		{"forked once", []gapVerdict{forked}, []uint64{7}, false},
		{"forked then gone", []gapVerdict{forked, walGone, walGone}, []uint64{7, 7, 7}, false},
		{"gone then forked", []gapVerdict{walGone, walGone, walGone, forked}, []uint64{7, 7, 7, 7}, false},
	} {
		var g gapStreak
		var got bool
		for i, v := range c.seen {
			got = g.see(v, c.haves[i])
		}
		if got != c.want {
			t.Errorf("%s: confirmed %v, want %v", c.name, got, c.want)
		}
	}
}

// Re-clones wait a doubling backoff, stop at the limit, and count from
// zero after a quiet time caught up.
func TestRecloneBudget(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name     string
		attempts int
		since    time.Duration
		wait     time.Duration
		spent    bool
	}{
		{"first", 0, 0, 0, false},
		{"second at once", 1, 0, time.Minute, false},
		{"second after a minute", 1, time.Minute, 0, false},
		{"third", 2, time.Minute, time.Minute, false},
		{"capped", 4, 0, 8 * time.Minute, false},
		{"spent", recloneLimit, time.Hour, 0, true},
	} {
		r := recloneState{attempts: c.attempts, last: t0}
		wait, spent := r.wait(t0.Add(c.since), time.Minute)
		if wait != c.wait || spent != c.spent {
			t.Errorf("%s: wait %v spent %v, want %v %v", c.name, wait, spent, c.wait, c.spent)
		}
	}
	r := recloneState{attempts: recloneLimit, last: t0, spent: true}
	r.caughtUp(t0.Add(recloneQuiet - time.Second))
	if r.attempts != recloneLimit {
		t.Errorf("counted from zero before the quiet time")
	}
	r.caughtUp(t0.Add(recloneQuiet))
	if r.attempts != 0 || r.spent {
		t.Errorf("not counted from zero after the quiet time: %d", r.attempts)
	}
}

// gapBed is a primary with wal_keep_size 0 and a replica of it that was
// stopped while the primary wrote and checkpointed past the segment the
// replica needs next: the replica cannot stream again.
type gapBed struct {
	*pgBed
	primary, replica *Manager
	primaryServer    *Server
	rows             int
	marker           string
}

func newGapBed(t *testing.T, archive string) *gapBed {
	ctx := context.Background()
	b := &gapBed{pgBed: newPGBed(t)}
	b.primary = b.member(0, "new", 0)
	b.primary.Settings["wal_keep_size"] = "0"
	b.replica = b.member(1, "existing", 0)
	b.replica.CatchUpEvery, b.replica.RecloneBackoff = 100*time.Millisecond, time.Second
	if archive != "" {
		b.archiving(b.primary, "db", archive)
		b.archiving(b.replica, "db", archive)
	}
	b.primaryServer = b.start(b.primary, StartPrimary)
	if _, err := b.conn(0).Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	b.insert(ctx, 0, 1, 10)
	s1 := b.start(b.replica, StartReplica)
	b.waitRows(1, 10)
	b.marker = filepath.Join(b.replica.PGData, "cairn-test-old-data")
	if err := os.WriteFile(b.marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s1.Stop(); err != nil {
		t.Fatal(err)
	}
	var before string
	c := b.conn(0)
	if err := c.QueryRow(ctx, "SELECT pg_walfile_name(pg_current_wal_lsn())").Scan(&before); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		b.insert(ctx, 0, 11+10*i, 20+10*i)
		if _, err := c.Exec(ctx, "SELECT pg_switch_wal()"); err != nil {
			t.Fatal(err)
		}
	}
	b.rows = 60
	if archive != "" {
		b.archivedPast(ctx, 0)
	}
	for range 2 {
		if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
			t.Fatal(err)
		}
	}
	var oldest string
	if err := c.QueryRow(ctx, "SELECT min(name) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'").Scan(&oldest); err != nil {
		t.Fatal(err)
	}
	if oldest <= before {
		t.Fatalf("the primary still keeps %s (oldest %s): no gap", before, oldest)
	}
	t.Logf("the replica stopped in %s; the primary keeps %s on", before, oldest)
	return b
}

// runReplica runs the replica under the manager, as a pod does, until
// the returned stop is called.
func (b *gapBed) runReplica() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, b.replica, instancetest.Writer(b.t)) }()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			b.t.Errorf("the replica's manager: %v", err)
		}
	}
}

func (b *gapBed) oldDataKept() bool {
	_, err := os.Stat(b.marker)
	return err == nil
}

func (b *gapBed) attempts() int {
	b.replica.rc.mu.Lock()
	defer b.replica.rc.mu.Unlock()
	return b.replica.rc.attempts
}

// A replica whose next WAL segment the primary removed, with no archive:
// while no primary answers it keeps its data and serves as it is; once
// the primary answers it is re-cloned, keeping the old data until the
// clone is complete, and follows with every row.
func TestReplicaReclonesWhenItsWALIsGone(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	b := newGapBed(t, "")

	// No healthy primary: no re-clone, the data kept.
	if err := b.primaryServer.Stop(); err != nil {
		t.Fatal(err)
	}
	stop := b.runReplica()
	b.waitRows(1, 10)
	time.Sleep(20 * b.replica.CatchUpEvery)
	stop()
	if !b.oldDataKept() || b.attempts() != 0 {
		t.Fatalf("without a primary: old data kept %v, %d re-clones", b.oldDataKept(), b.attempts())
	}

	// The primary answers again: re-clone, then streaming with every row.
	b.primaryServer = b.start(b.member(0, "existing", 0), StartPrimary)
	start := time.Now()
	stop = b.runReplica()
	defer stop()
	b.waitRows(1, b.rows)
	t.Logf("re-cloned and caught up in %v", time.Since(start).Round(10*time.Millisecond))
	if b.oldDataKept() || b.attempts() != 1 {
		t.Fatalf("old data kept %v, %d re-clones, want replaced by one", b.oldDataKept(), b.attempts())
	}
	b.insert(context.Background(), 0, b.rows+1, b.rows+5)
	b.waitRows(1, b.rows+5)
	instancetest.Eventually(t, 30*time.Second, "pg-1 streams", func(ctx context.Context) error {
		if got, err := b.streamingTo(ctx, 0); err != nil || !got["pg-1"] {
			return fmt.Errorf("streaming: %v %v", got, err)
		}
		return nil
	})
}

// The same gap with the segments archived: the replica reads them with
// its restore_command and catches up without a re-clone.
func TestReplicaCatchesUpFromTheArchive(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	b := newGapBed(t, "file://"+t.TempDir())
	start := time.Now()
	stop := b.runReplica()
	defer stop()
	b.waitRows(1, b.rows)
	t.Logf("caught up from the archive in %v", time.Since(start).Round(10*time.Millisecond))
	b.insert(context.Background(), 0, b.rows+1, b.rows+5)
	b.waitRows(1, b.rows+5)
	time.Sleep(10 * b.replica.CatchUpEvery)
	if !b.oldDataKept() || b.attempts() != 0 {
		t.Fatalf("old data kept %v, %d re-clones, want no re-clone", b.oldDataKept(), b.attempts())
	}
}

// Re-clones that fail (here pg_basebackup cannot log in) keep the old
// data each time, back off, and stop at recloneLimit; the replica goes
// on serving what it has.
func TestReplicaRecloneFailuresAreBounded(t *testing.T) {
	b := newGapBed(t, "")
	b.replica.ReplicationPassword = "not the password"
	b.replica.RecloneBackoff = 50 * time.Millisecond
	stop := b.runReplica()
	defer stop()
	instancetest.Eventually(t, 2*time.Minute, "the re-clones spent", func(context.Context) error {
		b.replica.rc.mu.Lock()
		defer b.replica.rc.mu.Unlock()
		if !b.replica.rc.spent {
			return fmt.Errorf("%d attempts", b.replica.rc.attempts)
		}
		return nil
	})
	if !b.oldDataKept() || b.attempts() != recloneLimit {
		t.Fatalf("old data kept %v after %d re-clones, want kept after %d", b.oldDataKept(), b.attempts(), recloneLimit)
	}
	b.waitRows(1, 10)
}

// An archive that cannot be read might hold the segment: the replica is
// never re-cloned while it fails, and catches up from it once it can be
// read again.
func TestReplicaIsNotReclonedWhileItsArchiveFails(t *testing.T) {
	archive := t.TempDir()
	b := newGapBed(t, "file://"+archive)
	aside := archive + ".aside"
	if err := os.Rename(archive, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(archive, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := b.runReplica()
	defer stop()
	b.waitRows(1, 10)
	time.Sleep(20 * b.replica.CatchUpEvery)
	if !b.oldDataKept() || b.attempts() != 0 {
		t.Fatalf("with the archive failing: old data kept %v, %d re-clones", b.oldDataKept(), b.attempts())
	}
	if err := os.Remove(archive); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aside, archive); err != nil {
		t.Fatal(err)
	}
	b.waitRows(1, b.rows)
	if !b.oldDataKept() || b.attempts() != 0 {
		t.Fatalf("caught up: old data kept %v, %d re-clones, want no re-clone", b.oldDataKept(), b.attempts())
	}
}

// A re-clone's swap stopped by a crash: the old data is put back when
// nothing took its place, and removed when the clone did or when its
// removal had begun (no PG_VERSION).
func TestInterruptedSwapIsUndone(t *testing.T) {
	for _, c := range []struct {
		name                    string
		replacedWhole, clonedIn bool
		wantReplaced            bool
		wantVersion             string
	}{
		{"between the renames", true, false, false, "old"},
		{"after the clone moved in", true, true, false, "new"},
		{"removal begun", false, false, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			m := &Manager{Name: "pg-1", PGData: filepath.Join(dir, "pgdata"), Log: instancetest.Logger(t)}
			mk := func(d, version string) {
				if err := os.MkdirAll(filepath.Join(d, "base"), 0o700); err != nil {
					t.Fatal(err)
				}
				if version != "" {
					_ = os.WriteFile(filepath.Join(d, "PG_VERSION"), []byte(version), 0o600)
				}
			}
			version := ""
			if c.replacedWhole {
				version = "old"
			}
			mk(m.replacedDir(), version)
			if c.clonedIn {
				mk(m.PGData, "new")
			}
			mk(m.cloneDir(), "partial")
			if err := m.discardPartialClone(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(m.PGData, "PG_VERSION"))
			_, rerr := os.Stat(m.replacedDir())
			_, cerr := os.Stat(m.cloneDir())
			if string(got) != c.wantVersion || (rerr == nil) != c.wantReplaced || cerr == nil {
				t.Errorf("data %q, replaced left %v, clone left %v; want data %q", got, rerr == nil, cerr == nil, c.wantVersion)
			}
		})
	}
}

// A pending re-clone is called off, the data kept, when no primary
// answers or the member is labelled primary; nothing pending does
// nothing.
func TestRecloneCalledOff(t *testing.T) {
	for _, c := range []struct {
		name, primary, label string
		pending              bool
	}{
		{"nothing pending", "127.0.0.1:1", "replica", false},
		{"no primary", "", "replica", true},
		{"labelled primary", "127.0.0.1:1", "primary", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &Manager{Name: "pg-1", PGData: filepath.Join(t.TempDir(), "pgdata"), Log: instancetest.Logger(t),
				RoleLabel: func() string { return c.label }}
			m.rc.pending, m.rc.why = c.pending, "test"
			recloned, err := m.prepareReclone(context.Background(), c.primary)
			if recloned || err != nil || m.rc.isPending() {
				t.Errorf("re-cloned %v, %v, still pending %v", recloned, err, m.rc.isPending())
			}
		})
	}
}
