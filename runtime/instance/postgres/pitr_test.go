package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/testbed"
)

// walCommand is the command archive_command and restore_command run
// for the member whose home is home.
func (b *pgBed) walCommand(home string) string {
	return testbed.WALClient(b.t) + " --socket " + filepath.Join(home, ".s.cairn-wal")
}

// archiving makes m archive WAL to location as cluster's member, each
// segment within a second of its first write (archive_timeout 1s), and
// starts its WAL server.
func (b *pgBed) archiving(m *Manager, cluster, location string) *Manager {
	b.t.Helper()
	home := filepath.Dir(m.PGData)
	m.Cluster, m.Config.ArchiveLocation = cluster, location
	m.WALCommand = b.walCommand(home)
	m.WALSocket = filepath.Join(home, ".s.cairn-wal")
	m.Settings["archive_mode"] = "on"
	m.Settings["archive_command"] = m.WALCommand + " push %f %p"
	m.Settings["archive_timeout"] = "1"
	ctx, cancel := context.WithCancel(context.Background())
	b.t.Cleanup(cancel)
	if err := m.ServeWAL(ctx); err != nil {
		b.t.Fatal(err)
	}
	return m
}

// archivedPast waits until ord's archiver has archived the segment that
// holds its current WAL position, and returns how long that took.
func (b *pgBed) archivedPast(ctx context.Context, ord int) time.Duration {
	b.t.Helper()
	start := time.Now()
	var seg string
	if err := b.conn(ord).QueryRow(ctx, "SELECT pg_walfile_name(pg_current_wal_lsn())").Scan(&seg); err != nil {
		b.t.Fatal(err)
	}
	b.waitArchived(ord, seg)
	return time.Since(start)
}

// waitArchived waits until ord's archiver has archived seg.
func (b *pgBed) waitArchived(ord int, seg string) {
	b.t.Helper()
	c := b.conn(ord)
	instancetest.Eventually(b.t, 2*time.Minute, "pg-"+fmt.Sprint(ord)+" archives "+seg, func(ctx context.Context) error {
		var last string
		var failed int64
		if err := c.QueryRow(ctx, "SELECT coalesce(last_archived_wal, ''), failed_count FROM pg_stat_archiver").Scan(&last, &failed); err != nil {
			return err
		}
		// Names of one timeline sort as their positions; a later
		// timeline's segment is later too.
		if strings.TrimSuffix(last, ".partial") < seg {
			return fmt.Errorf("last archived %q (%d failures)", last, failed)
		}
		return nil
	})
}

// insert writes rows from..to, one transaction each, on ord.
func (b *pgBed) insert(ctx context.Context, ord, from, to int) {
	b.t.Helper()
	c := b.conn(ord)
	for i := from; i <= to; i++ {
		if _, err := c.Exec(ctx, "INSERT INTO t (id) VALUES ($1)", i); err != nil {
			b.t.Fatalf("pg-%d: insert %d: %v", ord, i, err)
		}
	}
}

// A point-in-time restore: rows are written before and after a target
// time, with a failover in between (a new timeline); a new cluster
// restored at the target holds exactly the rows committed before it, one
// restored at latest holds them all, and the archive's damage is refused
// with where it is. On a file:// folder and on S3.
func TestPITRToATargetTimeAcrossAFailover(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	for _, store := range []string{"file", "s3"} {
		t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			location := "file://" + t.TempDir()
			if store == "s3" {
				location = testbed.S3Server(t, "pitr")
			}
			src := newPGBed(t)
			p0 := src.archiving(src.member(0, "new"), "src", location)
			s0 := src.start(p0, StartPrimary)
			if _, err := src.conn(0).Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY, at timestamptz DEFAULT clock_timestamp())"); err != nil {
				t.Fatal(err)
			}
			src.insert(ctx, 0, 1, 10)
			p1 := src.archiving(src.member(1, "existing", 0), "src", location)
			src.start(p1, StartReplica)

			st, err := backup.OpenFromEnv(location)
			if err != nil {
				t.Fatal(err)
			}
			bsrc := backup.PostgresSource{Member: "pg-0", Host: instancetest.HostOf(0), Port: src.ports[0], User: ReplicationUser, Password: testReplPW}
			m, err := backup.Take(ctx, st, "src", "PostgresCluster", bsrc, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if m.Postgres.SystemID == "" || m.Postgres.WALSegmentSize != 16<<20 {
				t.Fatalf("the backup records system %q and segments of %d bytes", m.Postgres.SystemID, m.Postgres.WALSegmentSize)
			}

			// After the backup, on timeline 1: rows 11-20, archived.
			src.insert(ctx, 0, 11, 20)
			t.Logf("an idle primary's last write archived after %v (archive_timeout 1s)", src.archivedPast(ctx, 0).Round(10*time.Millisecond))
			instancetest.Eventually(t, 30*time.Second, "pg-1 replays row 20", func(ctx context.Context) error {
				if n, err := src.count(ctx, 1); err != nil || n != 20 {
					return fmt.Errorf("%d rows: %v", n, err)
				}
				return nil
			})
			// The failover: the primary killed, the replica promoted.
			s0.Kill()
			if _, err := src.conn(1).Exec(ctx, "SELECT pg_promote()"); err != nil {
				t.Fatal(err)
			}
			// On timeline 2: rows 21-30 before the target, 31-40 after.
			src.insert(ctx, 1, 21, 30)
			time.Sleep(20 * time.Millisecond)
			target := time.Now()
			time.Sleep(20 * time.Millisecond)
			src.insert(ctx, 1, 31, 40)
			src.archivedPast(ctx, 1)

			// restore creates a new cluster from the latest backup at tgt,
			// which must hold rows 1..want.
			restore := func(t *testing.T, tgt string, want int) (*Manager, error) {
				dst := newPGBed(t)
				p := dst.archiving(dst.member(0, "new"), "dst", location)
				p.Config.Restore = &instance.Restore{Location: location, Cluster: "src", Backup: "latest", Target: tgt}
				_, _, err := p.Prepare(ctx)
				if err != nil {
					return p, err
				}
				s, err := p.Start(ctx, false, instancetest.Writer(t))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Kill() })
				rows := dst.conn(0)
				var n, lo, hi int
				if err := rows.QueryRow(ctx, "SELECT count(*), min(id), max(id) FROM t").Scan(&n, &lo, &hi); err != nil {
					t.Fatal(err)
				}
				if n != want || lo != 1 || hi != want {
					t.Fatalf("restored at %s: %d rows %d..%d, want exactly 1..%d", tgt, n, lo, hi, want)
				}
				return p, nil
			}
			t.Run("target", func(t *testing.T) {
				if _, err := restore(t, target.UTC().Format(time.RFC3339Nano), 30); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("latest", func(t *testing.T) {
				if _, err := restore(t, contract.RestoreLatest, 40); err != nil {
					t.Fatal(err)
				}
			})

			// Damage: a segment between the backup and the target changed
			// in the archive, then missing.
			path, err := backup.PlanRecovery(ctx, st, m, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if len(path.Timelines) != 2 || path.Timeline != 2 {
				t.Fatalf("the chain follows timelines %v to %d, want [1 2] to 2", path.Timelines, path.Timeline)
			}
			victim := backup.Segment{Timeline: 1, No: mustLSN(t, m.Postgres.EndLSN) / uint64(m.Postgres.WALSegmentSize)}.Name(m.Postgres.WALSegmentSize)
			key := backup.WALPrefix("src", mustUint(t, m.Postgres.SystemID)) + victim + ".gz"
			orig := readObject(t, st, key)
			t.Run("corrupt", func(t *testing.T) {
				bad := append([]byte(nil), orig...)
				bad[len(bad)/2] ^= 0xff
				putObject(t, st, key, bad)
				defer putObject(t, st, key, orig)
				p, err := restore(t, target.UTC().Format(time.RFC3339Nano), 30)
				if err == nil || !strings.Contains(err.Error(), "stopped before it promoted") {
					t.Fatalf("a restore through a damaged segment: %v", err)
				}
				if _, serr := os.Stat(p.PGData); !os.IsNotExist(serr) {
					t.Fatalf("the failed restore left %s: %v", p.PGData, serr)
				}
				t.Logf("refused: %v", err)
			})
			t.Run("gap", func(t *testing.T) {
				if err := st.Delete(ctx, key); err != nil {
					t.Fatal(err)
				}
				defer putObject(t, st, key, orig)
				for _, tgt := range []string{contract.RestoreLatest, target.UTC().Format(time.RFC3339Nano)} {
					p, err := restore(t, tgt, 0)
					if err == nil || !strings.Contains(err.Error(), victim) {
						t.Fatalf("a restore to %s across a missing %s: %v", tgt, victim, err)
					}
					if _, serr := os.Stat(p.PGData); !os.IsNotExist(serr) {
						t.Fatalf("the refused restore left %s: %v", p.PGData, serr)
					}
					t.Logf("refused: %v", err)
				}
			})
			// Nothing was deleted on the way: the archive still holds every
			// segment of the chain.
			if again, err := backup.PlanRecovery(ctx, st, m, time.Time{}); err != nil || again.Last != path.Last {
				t.Fatalf("after the refusals the chain reaches %q, before %q: %v", again.Last, path.Last, err)
			}
		})
	}
}

func mustLSN(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := backup.ParseLSN(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	var v uint64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func readObject(t *testing.T, st backup.Store, key string) []byte {
	t.Helper()
	r, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func putObject(t *testing.T, st backup.Store, key string, data []byte) {
	t.Helper()
	if _, err := st.Put(context.Background(), key, strings.NewReader(string(data))); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
