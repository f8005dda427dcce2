package backup_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
)

const (
	pgSuperPW = "super'pw"
	pgReplPW  = "repl:pw"
)

// pgPrimary is a real PostgreSQL 15 primary on 127.0.0.1, made by the
// instance manager as a create step makes member 0.
type pgPrimary struct {
	dir  string
	port int
	cred *syscall.Credential
	bin  string
}

func startPrimary(t testing.TB) *pgPrimary {
	t.Helper()
	return startPrimaryWith(t, nil)
}

// startPrimaryWith starts a primary with the settings extra returns, once
// the primary's folder and owner are known (nil: none).
func startPrimaryWith(t testing.TB, extra func(p *pgPrimary) map[string]string) *pgPrimary {
	t.Helper()
	dir, err := os.MkdirTemp("", "cairn-backup-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &pgPrimary{dir: dir, port: testbed.FreePort(t), cred: testbed.PostgresCredential(t, dir), bin: testbed.PostgresBin(t)}
	conf := fmt.Sprintf("wal_level = replica\nmax_wal_senders = 8\nhba_file = '%s/pg_hba.conf'\n", dir)
	hba := "local all all trust\nhost replication replicator 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 scram-sha-256\n"
	for name, content := range map[string]string{"postgresql.conf": conf, "pg_hba.conf": hba} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := &postgres.Manager{
		Name: "db-0", PGData: filepath.Join(dir, "pgdata"), BinDir: p.bin, ConfigFile: filepath.Join(dir, "postgresql.conf"),
		Settings: map[string]string{"listen_addresses": "127.0.0.1", "port": strconv.Itoa(p.port), "unix_socket_directories": dir},
		Host:     "127.0.0.1", Port: p.port, Config: postgres.Config{Config: instance.Config{Bootstrap: "new"}},
		SuperuserPassword: pgSuperPW, ReplicationPassword: pgReplPW, Credential: p.cred, Log: testbed.Logger(t, 100),
	}
	if extra != nil {
		maps.Copy(m.Settings, extra(p))
	}
	ctx := context.Background()
	_, initialised, err := m.Prepare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Start(ctx, initialised, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return p
}

func (p *pgPrimary) conn(t testing.TB, port int) *pgx.Conn {
	t.Helper()
	cfg, _ := pgx.ParseConfig("")
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = "127.0.0.1", uint16(port), postgres.Superuser, pgSuperPW, "postgres"
	var c *pgx.Conn
	testbed.Eventually(t, "PostgreSQL answers", func() (err error) {
		c, err = pgx.ConnectConfig(context.Background(), cfg)
		return err
	})
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (p *pgPrimary) source() backup.PostgresSource {
	return backup.PostgresSource{Member: "db-0", Host: "127.0.0.1", Port: p.port, User: "replicator", Password: pgReplPW}
}

// startCopy starts PostgreSQL on a restored data directory, on a new port.
func (p *pgPrimary) startCopy(t testing.TB, dataDir string) int {
	t.Helper()
	port := testbed.FreePort(t)
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), "-D", dataDir, "-c", "config_file="+filepath.Join(dataDir, "postgresql.conf"),
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(port), "-c", "unix_socket_directories="+p.dir,
		"-c", "hba_file="+filepath.Join(p.dir, "pg_hba.conf"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: p.cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return port
}

func (p *pgPrimary) chown(path string) error {
	if p.cred == nil {
		return nil
	}
	return os.Lchown(path, int(p.cred.Uid), int(p.cred.Gid))
}

// A base backup holds exactly the rows committed before it began; the
// restored copy starts on its own, consistent, with those rows.
func TestPostgresBaseBackupAndRestore(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	ctx := context.Background()
	p := startPrimary(t)
	c := p.conn(t, p.port)
	if _, err := c.Exec(ctx, "CREATE TABLE t (id int primary key, v text); INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 5000) g"); err != nil {
		t.Fatal(err)
	}
	all := backup.StoresForTest(t)
	for i, name := range []string{"file", "s3"} {
		st := all[name]
		t.Run(name, func(t *testing.T) {
			m, err := backup.Take(ctx, st, "db", "PostgresCluster", p.source(), time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if m.Postgres == nil || m.Postgres.StartLSN == "" || m.Postgres.EndLSN == "" || m.Postgres.Timeline != 1 || m.Version == "" || m.Source != "db-0" {
				t.Fatalf("manifest: %+v %+v", m, m.Postgres)
			}
			if _, err := c.Exec(ctx, "INSERT INTO t VALUES (100000 + $1, 'after')", i); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(p.dir, "restored-"+name)
			if _, err := backup.RestorePostgres(ctx, st, m, backup.PostgresRestore{DataDir: dir, Chown: p.chown}); err != nil {
				t.Fatal(err)
			}
			rc := p.conn(t, p.startCopy(t, dir))
			var n int
			var after int
			if err := rc.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE v = 'after') FROM t").Scan(&n, &after); err != nil {
				t.Fatal(err)
			}
			// Each earlier subtest wrote one row after its backup and before this one.
			if n != 5000+i || after != i {
				t.Fatalf("restored %d rows, %d of them written after a backup; want %d and %d", n, after, 5000+i, i)
			}
		})
	}
}

// smallDisk mounts a tmpfs of size bytes for the test: a disk that fills.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Fatalf("mount a small tmpfs for the full-disk case (the tests run as root, as CI does): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	return dir
}

// A restore onto a disk that fills up is a clear error and leaves
// nothing behind: no data directory, no temporary folder.
func TestPostgresRestoreOntoAFullDisk(t *testing.T) {
	ctx := context.Background()
	p := startPrimary(t)
	c := p.conn(t, p.port)
	if _, err := c.Exec(ctx, "CREATE TABLE t AS SELECT g FROM generate_series(1, 1000) g"); err != nil {
		t.Fatal(err)
	}
	st := &backup.FileStore{Root: t.TempDir()}
	m, err := backup.Take(ctx, st, "db", "PostgresCluster", p.source(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	disk := smallDisk(t, 4<<20)
	_, err = backup.RestorePostgres(ctx, st, m, backup.PostgresRestore{DataDir: filepath.Join(disk, "pgdata")})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("restore onto a full disk: %v", err)
	}
	if left, _ := os.ReadDir(disk); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}
