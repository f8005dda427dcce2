package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/testbed"
)

// Where a timeline ended, read from a history file as PostgreSQL writes
// it; a file that is not one is an error, never a guess.
func TestTimelineEnd(t *testing.T) {
	const history = "1\t0/401B5B0\tno recovery target specified\n\n2\t0/5000000\tno recovery target specified\n"
	for _, c := range []struct {
		name    string
		history string
		tli     uint32
		end     uint64
		known   bool
		wantErr bool
	}{
		{"first timeline", history, 1, 0x401B5B0, true, false},
		{"second timeline", history, 2, 0x5000000, true, false},
		{"not in the history", history, 3, 0, false, false},
		{"comments and blank lines", "# written by hand\n\n1\t0/10\treason\n", 1, 0x10, true, false},
		{"empty", "", 1, 0, false, false},
		{"no position", "1\n", 1, 0, false, true},
		{"not a timeline", "x\t0/10\treason\n", 1, 0, false, true},
		{"not a position", "1\tnowhere\treason\n", 1, 0, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			end, known, err := timelineEnd("00000003.history", c.history, c.tli)
			if (err != nil) != c.wantErr || end != c.end || known != c.known {
				t.Errorf("timelineEnd = %X, %v, %v; want %X, %v, error %v", end, known, err, c.end, c.known, c.wantErr)
			}
		})
	}
}

// A replica that received more of the old primary's WAL than the member
// promoted in its place forked off the new timeline: it never follows by
// streaming, so it is rewound onto the new primary's timeline and
// streams again, with the new primary's rows and without the rows only
// it had (which no client was told were safe: in synchronous mode the
// promoted standby had every acknowledged one).
func TestForkedReplicaIsRewound(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	ctx := context.Background()
	b := newPGBed(t)
	old := b.member(0, "new", 0)
	oldServer := b.start(old, StartPrimary)
	if _, err := b.conn(0).Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	b.insert(ctx, 0, 1, 10)
	promoted := b.start(b.member(1, "existing", 0), StartReplica)
	forkedMember := b.member(2, "existing", 0)
	forkedServer := b.start(forkedMember, StartReplica)
	b.waitRows(1, 10)
	b.waitRows(2, 10)

	// The member to be promoted stops; the other replica receives more.
	if err := promoted.Stop(); err != nil {
		t.Fatal(err)
	}
	b.insert(ctx, 0, 11, 20)
	b.waitRows(2, 20)
	if err := forkedServer.Stop(); err != nil {
		t.Fatal(err)
	}
	oldServer.Kill()

	// Member 1 comes back alone and is promoted: timeline 2 forks off
	// where it stopped, before what member 2 holds.
	b.start(b.member(1, "existing"), StartReplica)
	if _, err := b.conn(1).Exec(ctx, "SELECT pg_promote()"); err != nil {
		t.Fatal(err)
	}
	instancetest.Eventually(t, time.Minute, "pg-1 takes writes", func(ctx context.Context) error {
		c, err := b.dial(ctx, 1)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "INSERT INTO t VALUES (1001) ON CONFLICT DO NOTHING")
		return err
	})

	// Member 2 runs under its manager, following the new primary.
	forkedMember.Candidates = []string{b.addr(0), b.addr(1)}
	forkedMember.CatchUpEvery, forkedMember.RecloneBackoff = 200*time.Millisecond, time.Second
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(rctx, forkedMember, instancetest.Writer(t)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("pg-2's manager: %v", err)
		}
	}()
	b.insert(ctx, 1, 1002, 1010)
	instancetest.Eventually(t, 2*time.Minute, "pg-2 holds the new primary's rows and none of its own", func(ctx context.Context) error {
		c, err := b.dial(ctx, 2)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		var n, mine int
		err = c.QueryRow(ctx, "SELECT count(*) FILTER (WHERE id > 1000), count(*) FILTER (WHERE id BETWEEN 11 AND 20) FROM t").Scan(&n, &mine)
		if err != nil || n != 10 || mine != 0 {
			return fmt.Errorf("%d of the new primary's 10 rows, %d rows only it had: %v", n, mine, err)
		}
		return nil
	})
	forkedMember.rc.mu.Lock()
	attempts := forkedMember.rc.attempts
	forkedMember.rc.mu.Unlock()
	if attempts != 1 {
		t.Errorf("%d rewinds or re-clones, want 1", attempts)
	}
}
