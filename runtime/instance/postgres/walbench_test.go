package postgres

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/testbed"
)

// BenchmarkWALArchiveUnderPgbench: does archiving keep up with a write
// load? A primary archives through its instance manager (archive_timeout
// 60s, as rendered) to file:// or S3 ($CAIRN_BENCH_WAL_STORE=s3, the
// loopback gofakes3 server) while pgbench (scale 20, 4 clients, commits
// not waiting for the disk,
// $CAIRN_BENCH_PGBENCH_SECONDS, default 30) writes. Every 250 ms it
// samples the segments waiting in pg_wal (.ready); it reports the WAL
// written per second, the most segments waiting at once, and how long
// after pgbench stopped the last segment of the load was archived. Then
// a bulk load (CREATE TABLE AS, about 500 MB) writes WAL as fast as the
// server can: it reports that rate and the rate at which the archive
// took all of it.
//
//	go test ./runtime/instance/postgres -run '^$' -bench WALArchiveUnderPgbench -benchtime 1x
func BenchmarkWALArchiveUnderPgbench(b *testing.B) {
	seconds := 30
	if v, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_PGBENCH_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	location := "file://" + b.TempDir()
	if os.Getenv("CAIRN_BENCH_WAL_STORE") == "s3" {
		location = testbed.S3Server(b, "bench")
	}
	ctx := context.Background()
	for range b.N {
		bed := newPGBed(b)
		p := bed.archiving(bed.member(0, "new"), "bench", location)
		p.Settings["archive_timeout"] = "60"
		p.Settings["max_wal_size"] = "4GB"
		// Commits not waiting for the disk: as much WAL as the machine writes.
		p.Settings["synchronous_commit"] = "off"
		bed.start(p, StartPrimary)
		pgbench := func(args ...string) {
			b.Helper()
			cmd := exec.Command(filepath.Join(bed.bin, "pgbench"), append([]string{"-h", instancetest.HostOf(0), "-p", strconv.Itoa(bed.ports[0]), "-U", Superuser}, append(args, "postgres")...)...)
			cmd.Env = append(instance.ChildEnv(), "PGPASSWORD="+testSuperPW)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: bed.cred}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("pgbench %v: %v: %s", args, err, out)
			}
		}
		pgbench("-i", "-q", "-s", "20")
		c := bed.conn(0)
		var startLSN string
		if err := c.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&startLSN); err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		maxPending := 0
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			s := bed.conn(0)
			for {
				select {
				case <-stop:
					return
				case <-time.After(250 * time.Millisecond):
				}
				var n int
				if err := s.QueryRow(ctx, "SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready'").Scan(&n); err == nil {
					maxPending = max(maxPending, n)
				}
			}
		}()
		b.ResetTimer()
		pgbench("-c", "4", "-j", "2", "-T", strconv.Itoa(seconds), "-N")
		end := time.Now()
		var endLSN, seg string
		if err := c.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text, pg_walfile_name(pg_switch_wal())").Scan(&endLSN, &seg); err != nil {
			b.Fatal(err)
		}
		bed.waitArchived(0, seg)
		behind := time.Since(end)
		b.StopTimer()
		close(stop)
		<-sampled
		var bytes float64
		if err := c.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)", endLSN, startLSN).Scan(&bytes); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(bytes/float64(seconds)/(1<<20), "WAL-MiB/s")
		b.ReportMetric(float64(maxPending), "max-pending-segments")
		b.ReportMetric(behind.Seconds(), "s-archived-after-load")
		b.Logf("%s pgbench: %.0f MiB of WAL in %d s, at most %d segments waiting, the last archived %v after the load", location[:4], bytes/(1<<20), seconds, maxPending, behind.Round(10*time.Millisecond))

		// A bulk load, as fast as the server writes WAL: how fast the
		// archive drains what it leaves.
		var before string
		if err := c.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&before); err != nil {
			b.Fatal(err)
		}
		bulk := time.Now()
		if _, err := c.Exec(ctx, "CREATE TABLE bulk AS SELECT g, repeat('x', 900) AS pad FROM generate_series(1, 500000) g"); err != nil {
			b.Fatal(err)
		}
		loaded := time.Since(bulk)
		if err := c.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text, pg_walfile_name(pg_switch_wal())").Scan(&endLSN, &seg); err != nil {
			b.Fatal(err)
		}
		bed.waitArchived(0, seg)
		drained := time.Since(bulk)
		if err := c.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)", endLSN, before).Scan(&bytes); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(bytes/loaded.Seconds()/(1<<20), "bulk-WAL-MiB/s")
		b.ReportMetric(bytes/drained.Seconds()/(1<<20), "bulk-archived-MiB/s")
		b.Logf("%s bulk load: %.0f MiB of WAL written in %v (%.0f MiB/s), all archived %v after it began (%.0f MiB/s)", location[:4], bytes/(1<<20),
			loaded.Round(10*time.Millisecond), bytes/loaded.Seconds()/(1<<20), drained.Round(10*time.Millisecond), bytes/drained.Seconds()/(1<<20))
	}
}
