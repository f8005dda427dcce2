package postgres

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/testbed"
)

// The first member of a create step from a base backup restores it in
// place of initdb and takes the new cluster's superuser password; the
// restored copy holds the rows of the backup and none after.
func TestPostgresCreateStepRestoresABaseBackup(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	ctx := context.Background()
	stores := t.TempDir()
	src := newPGBed(t)
	src.start(src.member(0, "new"), StartPrimary)
	if _, err := src.conn(0).Exec(ctx, "CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 300)"); err != nil {
		t.Fatal(err)
	}
	bsrc := backup.PostgresSource{Member: "pg-0", Host: instancetest.HostOf(0), Port: src.ports[0], User: ReplicationUser, Password: testReplPW}
	if _, err := backup.Take(ctx, &backup.FileStore{Root: stores}, "old", "PostgresCluster", bsrc, time.Now); err != nil {
		t.Fatal(err)
	}
	if _, err := src.conn(0).Exec(ctx, "INSERT INTO t VALUES (0)"); err != nil {
		t.Fatal(err)
	}

	dst := newPGBed(t)
	p := dst.member(0, "new")
	p.Config.Restore = &instance.Restore{Location: "file://" + stores, Cluster: "old", Backup: "latest"}
	p.SuperuserPassword = "a new cluster's password"
	dst.start(p, StartPrimary)
	c, err := dialAs(ctx, instancetest.HostOf(0), dst.ports[0], p.SuperuserPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n, zero int
	if err := c.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE id = 0) FROM t").Scan(&n, &zero); err != nil || n != 300 || zero != 0 {
		t.Fatalf("restored %d rows (%d written after the backup): %v", n, zero, err)
	}
	if _, err := dialAs(ctx, instancetest.HostOf(0), dst.ports[0], testSuperPW); err == nil {
		t.Fatal("the old cluster's superuser password still works")
	}
}

// A backup carries data, never settings or code: the cluster it was
// taken of set an archive_command with ALTER SYSTEM (postgresql.auto.conf)
// and left a library in its data directory; the new cluster restored
// from it runs neither, its configuration files are cairn's, and the
// restore names what it left out.
func TestPostgresRestoreBringsDataOnly(t *testing.T) {
	ctx := context.Background()
	stores := t.TempDir()
	src := newPGBed(t)
	sp := src.member(0, "new")
	src.start(sp, StartPrimary)
	pwned := filepath.Join(src.dir, "pwned")
	planted := "touch " + pwned
	for _, q := range []string{"CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 10)",
		"ALTER SYSTEM SET archive_mode = on", "ALTER SYSTEM SET archive_command = '" + planted + "'"} {
		if _, err := src.conn(0).Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	evil := filepath.Join(sp.PGData, "evil.so")
	if err := os.WriteFile(evil, []byte("\x7fELF"), 0o600); err != nil {
		t.Fatal(err)
	}
	if src.cred != nil {
		if err := os.Chown(evil, int(src.cred.Uid), int(src.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	bsrc := backup.PostgresSource{Member: "pg-0", Host: instancetest.HostOf(0), Port: src.ports[0], User: ReplicationUser, Password: testReplPW}
	if _, err := backup.Take(ctx, &backup.FileStore{Root: stores}, "old", "PostgresCluster", bsrc, time.Now); err != nil {
		t.Fatal(err)
	}

	dst := newPGBed(t)
	p := dst.member(0, "new")
	p.Config.Restore = &instance.Restore{Location: "file://" + stores, Cluster: "old", Backup: "latest"}
	logs := &testbed.SyncBuffer{}
	p.Log = slog.New(slog.NewTextHandler(logs, nil))
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	dst.start(p, StartPrimary)
	c, err := dialAs(ctx, instancetest.HostOf(0), dst.ports[0], p.SuperuserPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	var mode, command string
	if err := c.QueryRow(ctx, "SELECT (SELECT count(*) FROM t), current_setting('archive_mode'), current_setting('archive_command')").Scan(&n, &mode, &command); err != nil {
		t.Fatal(err)
	}
	if n != 10 || mode != "off" || command == planted {
		t.Fatalf("restored %d rows; archive_mode %q, archive_command %q: the backup's settings came back", n, mode, command)
	}
	if _, err := os.Stat(filepath.Join(p.PGData, "evil.so")); !os.IsNotExist(err) {
		t.Errorf("the backup's evil.so was restored (%v)", err)
	}
	auto, err := os.ReadFile(filepath.Join(p.PGData, "postgresql.auto.conf"))
	if err != nil || strings.Contains(string(auto), "archive") {
		t.Errorf("postgresql.auto.conf: %q, %v", auto, err)
	}
	for _, want := range []string{"left out what the backup holds", "count=", "evil.so", "postgresql.auto.conf"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the restore's log does not say %q", want)
		}
	}
}

// A base backup of one major is refused by a member of another, before
// anything is unpacked, with what to do instead; the member never starts.
func TestPostgresRestoreRefusesAnotherMajor(t *testing.T) {
	ctx := context.Background()
	stores := t.TempDir()
	src := newPGBedAt(t, testbed.PostgresBinFor(t, 13))
	src.start(src.member(0, "new"), StartPrimary)
	bsrc := backup.PostgresSource{Member: "pg-0", Host: instancetest.HostOf(0), Port: src.ports[0], User: ReplicationUser, Password: testReplPW}
	m, err := backup.Take(ctx, &backup.FileStore{Root: stores}, "old", "PostgresCluster", bsrc, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Version, "13.") {
		t.Fatalf("the backup is of %q, not of PostgreSQL 13", m.Version)
	}

	dst := newPGBedAt(t, testbed.PostgresBinFor(t, 15))
	p := dst.member(0, "new")
	p.Config.Restore = &instance.Restore{Location: "file://" + stores, Cluster: "old", Backup: m.ID}
	_, _, err = p.Prepare(ctx)
	if err == nil || !strings.Contains(err.Error(), "is of PostgreSQL 13.") || !strings.Contains(err.Error(), "runs PostgreSQL 15") {
		t.Fatalf("restoring a 13 backup on 15: %v", err)
	}
	if _, err := os.Stat(p.PGData); !os.IsNotExist(err) {
		t.Fatalf("the refused restore left %s: %v", p.PGData, err)
	}
}

func dialAs(ctx context.Context, host string, port int, password string) (*pgx.Conn, error) {
	cfg, _ := pgx.ParseConfig("")
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = host, uint16(port), Superuser, password, "postgres"
	return pgx.ConnectConfig(ctx, cfg)
}
