package backup_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// BenchmarkBaseBackup1GiB backs up a PostgreSQL database of about 1 GiB
// with cairn (the replication protocol, streamed to a file:// store) and
// with plain `pg_basebackup -Ft -X fetch` to a local file, on the same
// machine; compare their MB/s:
//
//	go test ./runtime/backup -run '^$' -bench BaseBackup1GiB -benchtime 3x
func BenchmarkBaseBackup1GiB(b *testing.B) {
	ctx := context.Background()
	p := startPrimary(b)
	c := p.conn(b, p.port)
	if _, err := c.Exec(ctx, "CREATE TABLE big AS SELECT g AS id, repeat(md5(g::text), 28) AS v FROM generate_series(1, 1100000) g"); err != nil {
		b.Fatal(err)
	}
	var size int64
	if err := c.QueryRow(ctx, "SELECT pg_database_size('postgres')").Scan(&size); err != nil {
		b.Fatal(err)
	}
	b.Logf("database size %d MiB", size>>20)
	b.Run("cairn-file", func(b *testing.B) {
		b.SetBytes(size)
		for range b.N {
			st := &backup.FileStore{Root: b.TempDir()}
			if _, err := backup.Take(ctx, st, "db", "PostgresCluster", p.source(), time.Now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pg_basebackup", func(b *testing.B) {
		b.SetBytes(size)
		for range b.N {
			dir := filepath.Join(p.dir, "pgbb-"+strconv.Itoa(b.N))
			os.RemoveAll(dir)
			cmd := exec.Command(filepath.Join(p.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", "replicator",
				"-D", dir, "-Ft", "-X", "fetch", "-c", "fast", "--no-manifest")
			cmd.Env = append(os.Environ(), "PGPASSWORD="+pgReplPW)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("pg_basebackup: %v %s", err, out)
			}
			os.RemoveAll(dir)
		}
	})
}
