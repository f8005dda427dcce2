package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	pginstance "github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/promtest"
)

func TestSegmentNumber(t *testing.T) {
	for _, c := range []struct {
		tail string
		size int64
		want uint64
	}{
		{"0000000000000003", 16 << 20, 3},
		{"00000001000000FF", 16 << 20, 256 + 255},
		{"0000000100000000", 1 << 30, 4},
		{"", 16 << 20, 0},
		{"00000000000000XY", 16 << 20, 0},
		{"0000000000000003", 0, 0},
	} {
		if got := segmentNumber(c.tail, c.size); got != c.want {
			t.Errorf("segmentNumber(%q, %d) = %d, want %d", c.tail, c.size, got, c.want)
		}
	}
}

// A replica is behind the primary's WAL when the segment it reads next
// (from the greater of its received and replayed positions) is older
// than the primary's oldest; the record survives the member being down
// (a re-clone) and goes when it answers with its WAL; each change is one
// Event.
func TestWALRemoved(t *testing.T) {
	const seg = 16 << 20
	primary := pgMember{Name: "pg-0", Probe: pgProbe{Received: 9 * seg, OldestSegment: 5, SegmentSize: seg}}
	replica := func(name string, received, replayed uint64) pgMember {
		return pgMember{Name: name, Probe: pgProbe{InRecovery: true, Received: received, Replayed: replayed}}
	}
	down := pgMember{Name: "pg-1", Probe: pgProbe{Reach: reachDown}}
	for _, c := range []struct {
		name    string
		prev    map[string]string
		members []pgMember
		want    map[string]string
		events  []string
	}{
		{"behind", nil, []pgMember{primary, replica("pg-1", 3*seg, 3*seg+10)}, map[string]string{"pg-1": "0/3000000"}, []string{ReasonReplicaWALRemoved + " pg-1 needs WAL from 0/3000000"}},
		{"still behind", map[string]string{"pg-1": "0/3000000"}, []pgMember{primary, replica("pg-1", 3*seg, 3*seg)}, map[string]string{"pg-1": "0/3000000"}, nil},
		{"receives, replays slowly", nil, []pgMember{primary, replica("pg-1", 8*seg, 2*seg)}, nil, nil},
		{"primary keeps it", nil, []pgMember{primary, replica("pg-1", 5*seg, 5*seg)}, nil, nil},
		{"down while re-cloned", map[string]string{"pg-1": "0/3000000"}, []pgMember{primary, down}, map[string]string{"pg-1": "0/3000000"}, nil},
		{"caught up", map[string]string{"pg-1": "0/3000000"}, []pgMember{primary, replica("pg-1", 9*seg, 9*seg)}, nil, []string{ReasonReplicaCaughtUp + " pg-1 has the WAL"}},
		{"gone", map[string]string{"pg-2": "0/3000000"}, []pgMember{primary}, nil, nil},
		{"primary's oldest unknown", nil, []pgMember{{Name: "pg-0", Probe: pgProbe{Received: 9 * seg}}, replica("pg-1", 3*seg, 3*seg)}, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := walRemovedStatus(c.prev, c.members, c.members[0])
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("status %v, want %v", got, c.want)
			}
			evs := walRemovedEvents(c.prev, got, c.members, c.members[0])
			if len(evs) != len(c.events) {
				t.Fatalf("events %v, want %v", evs, c.events)
			}
			for i, ev := range evs {
				if s := ev.Reason + " " + ev.Message; !strings.HasPrefix(s, c.events[i]) {
					t.Errorf("event %q, want %q...", s, c.events[i])
				}
			}
		})
	}
}

// A replica stopped while its primary (wal_keep_size 0) wrote and
// checkpointed past its next segment comes back unable to stream: the
// runtime records it in the status, says so in a Warning Event and the
// gauge while the instance manager re-clones it, then a Normal Event once
// it has its WAL again, with every row.
func TestPostgresReplicaBehindThePrimarysWALIsReported(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	ns := cp.Namespace(t, "pgwalgone")
	pc := newPgCluster(t, cp, ns, 2, 30*time.Second)
	pc.member = func(p *pginstance.Manager) {
		p.Settings["wal_keep_size"] = "0"
		// Slow enough (about 12 s to confirm) for the runtime to see the
		// gap before the re-clone.
		p.CatchUpEvery = 3 * time.Second
	}
	pc.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pc.runtime(ctx, "runtime-a", FailoverSettings{}, nil)
	pc.waitFor("healthy", pc.healthy)
	pc.m.exec(0, "CREATE TABLE t (id int)")
	pc.m.exec(0, "INSERT INTO t SELECT generate_series(1, 10)")
	rows := func(want int) func() error {
		return func() error {
			got, err := pc.m.ids(1)
			if err != nil || len(got) != want {
				return fmt.Errorf("pg-1 has %d rows, want %d: %v", len(got), want, err)
			}
			return nil
		}
	}
	pc.waitFor("pg-1 has the rows", rows(10))

	nd := pc.nodes[1]
	nd.cancel()
	if err := <-nd.done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for i := range 5 {
		pc.m.exec(0, fmt.Sprintf("INSERT INTO t SELECT generate_series(%d, %d)", 11+10*i, 20+10*i))
		pc.m.exec(0, "SELECT pg_switch_wal()")
	}
	pc.m.exec(0, "CHECKPOINT")
	pc.m.exec(0, "CHECKPOINT")
	pc.run(1, "existing")

	gauge := func() float64 {
		return promtest.Series(t, pc.metrics[0])[`cairn_postgres_replica_wal_removed{cluster="pg",member="pg-1"}`]
	}
	pc.waitFor("the status and the gauge say pg-1 is behind", func() error {
		if st := pc.status(); st.WALRemoved["pg-1"] == "" || gauge() != 1 {
			return fmt.Errorf("status %v, gauge %v", st.WALRemoved, gauge())
		}
		return nil
	})
	pc.waitFor("a ReplicaWALRemoved Event", func() error { return pc.event(ReasonReplicaWALRemoved, "pg-1 needs WAL from") })
	pc.waitFor("a ReplicaCaughtUp Event", func() error { return pc.event(ReasonReplicaCaughtUp, "pg-1 has the WAL") })
	pc.waitFor("pg-1 has every row", rows(60))
	// The pass sets the gauge and records its Events before it writes its
	// status: the status clears a moment after the Event.
	pc.waitFor("the status and the gauge clear", func() error {
		if st := pc.status(); len(st.WALRemoved) != 0 || gauge() != 0 {
			return fmt.Errorf("after the re-clone: status %v, gauge %v", st.WALRemoved, gauge())
		}
		return nil
	})
	pc.waitFor("healthy again", pc.healthy)
}
