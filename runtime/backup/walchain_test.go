package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An archive of fake segments, each pushed at its own minute.
type walWorld struct {
	t   *testing.T
	a   WALArchive
	dir string
	at  time.Time
}

func newWALWorld(t *testing.T) *walWorld {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := &walWorld{t: t, dir: t.TempDir(), at: t0}
	w.a = WALArchive{Store: &FileStore{Root: t.TempDir()}, Cluster: "db", System: 7, Now: func() time.Time { return w.at }}
	return w
}

func (w *walWorld) push(name, content string) {
	w.t.Helper()
	w.at = w.at.Add(time.Minute)
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := w.a.Push(context.Background(), name, p); err != nil {
		w.t.Fatal(err)
	}
}

func (w *walWorld) segs(tli uint32, from, to uint64) {
	for n := from; n <= to; n++ {
		w.push(Segment{Timeline: tli, No: n}.Name(DefaultWALSegmentSize), "wal")
	}
}

// The backup ended in segment 3 of timeline 1, at 10:00.
func walBackup() Manifest {
	return Manifest{ID: "b", Cluster: "db", Finished: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		Postgres: &PostgresDetail{StartLSN: "0/2000028", EndLSN: "0/3000100", Timeline: 1, SystemID: "7"}}
}

func TestPlanRecovery(t *testing.T) {
	ctx := context.Background()
	at := func(min int) time.Time { return time.Date(2026, 12, 1, 10, min, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name    string
		archive func(w *walWorld)
		target  time.Time
		last    string
		tlis    int
		err     string
	}{
		{name: "no WAL yet: latest is the backup's end", archive: func(w *walWorld) {}, last: ""},
		{name: "one timeline", archive: func(w *walWorld) { w.segs(1, 3, 6) }, last: "000000010000000000000006", tlis: 1},
		{name: "a gap before later segments", archive: func(w *walWorld) { w.segs(1, 3, 4); w.segs(1, 6, 7) }, err: "000000010000000000000005 is missing"},
		{name: "a gap, a target before it", archive: func(w *walWorld) { w.segs(1, 3, 4); w.segs(1, 6, 7) }, target: at(1).Add(30 * time.Second), last: "000000010000000000000004"},
		{name: "a gap, a target past it", archive: func(w *walWorld) { w.segs(1, 3, 4); w.segs(1, 6, 7) }, target: at(3), err: "gap at 000000010000000000000005"},
		{name: "a target past the archive", archive: func(w *walWorld) { w.segs(1, 3, 4) }, target: at(30), err: "not archived (yet)"},
		{name: "a target before the backup ended", archive: func(w *walWorld) { w.segs(1, 3, 4) }, target: at(0).Add(-time.Hour), err: "only goes forwards"},
		{name: "across a failover", archive: func(w *walWorld) {
			w.segs(1, 3, 4)
			w.push("00000002.history", "1\t0/5000200\tno recovery target specified\n")
			w.push("000000010000000000000005.partial", "old")
			w.segs(2, 5, 6)
		}, last: "000000020000000000000006", tlis: 2},
		{name: "a failover's missing segment on the old timeline", archive: func(w *walWorld) {
			w.segs(1, 3, 3)
			w.push("00000002.history", "1\t0/5000200\tno recovery target specified\n")
			w.segs(2, 5, 6)
		}, err: "000000010000000000000004 is missing"},
		{name: "a branch that left before the backup is not followed", archive: func(w *walWorld) {
			w.push("00000002.history", "1\t0/1000000\tno recovery target specified\n")
			w.segs(2, 1, 9)
			w.segs(1, 3, 4)
		}, last: "000000010000000000000004", tlis: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWALWorld(t)
			tc.archive(w)
			p, err := PlanRecovery(ctx, w.a.Store, walBackup(), tc.target)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Last != tc.last || (tc.tlis > 0 && len(p.Timelines) != tc.tlis) {
				t.Fatalf("last %q timelines %v, want %q and %d", p.Last, p.Timelines, tc.last, tc.tlis)
			}
			if tc.last != "" && !p.Needs(tc.last) {
				t.Errorf("the path does not need its last segment %s", tc.last)
			}
		})
	}
}

// A segment archived twice with the same bytes is done; with others it
// is refused and the first copy kept. A damaged copy is refused on fetch.
func TestWALPushFetch(t *testing.T) {
	ctx := context.Background()
	w := newWALWorld(t)
	w.push("000000010000000000000003", "first")
	w.push("000000010000000000000003", "first")
	p := filepath.Join(w.dir, "other")
	_ = os.WriteFile(p, []byte("second"), 0o600)
	if err := w.a.Push(ctx, "000000010000000000000003", p); !errors.Is(err, ErrWALConflict) {
		t.Fatalf("a second copy with other bytes: %v", err)
	}
	dest := filepath.Join(w.dir, "RECOVERYXLOG")
	if err := w.a.Fetch(ctx, "000000010000000000000003", dest); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dest); string(got) != "first" {
		t.Fatalf("fetched %q", got)
	}
	if err := w.a.Fetch(ctx, "000000010000000000000009", dest); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing segment: %v", err)
	}
	for _, bad := range []string{"../../etc/passwd", "00000001000000000000000", "000000010000000000000003.gz"} {
		if err := w.a.Push(ctx, bad, p); err == nil {
			t.Errorf("pushed %q", bad)
		}
	}
}

// WAL retention keeps what the kept backups need and every history.
func TestPruneWAL(t *testing.T) {
	ctx := context.Background()
	w := newWALWorld(t)
	w.segs(1, 1, 8)
	w.push("00000002.history", "1\t0/5000200\tx\n")
	kept := []Manifest{{ID: "b", Cluster: "db", Postgres: &PostgresDetail{StartLSN: "0/5000028", SystemID: "7"}}}
	deleted, err := PruneWAL(ctx, w.a.Store, "db", kept)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deleted, " ") != "000000010000000000000001 000000010000000000000002 000000010000000000000003 000000010000000000000004" {
		t.Fatalf("deleted %v", deleted)
	}
	files, _ := w.a.list(ctx, DefaultWALSegmentSize)
	if len(files.segments) != 4 || !files.histories[2] {
		t.Fatalf("kept %v", files)
	}
}

// A fetch reads an archived file no further than the largest file of its
// kind PostgreSQL writes: one that decompresses past it (damaged, or
// planted to fill pg_wal's disk) is refused, and nothing is left at the
// destination or beside it.
func TestFetchStopsAtTheLargestFileOfItsKind(t *testing.T) {
	ctx := context.Background()
	w := newWALWorld(t)
	const history, tooLong = "00000002.history", "00000003.history"
	w.push(history, strings.Repeat("h", maxWALTextSize))
	w.push(tooLong, strings.Repeat("h", maxWALTextSize+1))
	out := t.TempDir()
	if err := w.a.Fetch(ctx, history, filepath.Join(out, "a")); err != nil {
		t.Fatalf("a history of exactly %d bytes: %v", maxWALTextSize, err)
	}
	dest := filepath.Join(out, "b")
	err := w.a.Fetch(ctx, tooLong, dest)
	if err == nil || !strings.Contains(err.Error(), "decompresses to more than 1048576 bytes") || !strings.Contains(err.Error(), tooLong) {
		t.Fatalf("a history one byte too long: %v", err)
	}
	if left, _ := os.ReadDir(out); len(left) != 1 || left[0].Name() != "a" {
		t.Errorf("left in the destination's folder: %v", left)
	}
	if _, err := w.a.sum(ctx, tooLong); err == nil {
		t.Error("a checksum read past the bound")
	}
	for name, want := range map[string]int64{
		"000000010000000000000003":                 MaxWALSegmentSize,
		"000000010000000000000003.partial":         MaxWALSegmentSize,
		"00000002.history":                         maxWALTextSize,
		"000000010000000000000003.00000028.backup": maxWALTextSize,
	} {
		if got := maxWALFileSize(name); got != want {
			t.Errorf("maxWALFileSize(%q) = %d, want %d", name, got, want)
		}
	}
}
