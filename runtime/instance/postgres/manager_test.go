package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/testbed"
)

const (
	testSuperPW = "s3cret:super'pw"
	testReplPW  = "s3cret:repl\\pw"
)

// pgBed runs members "pg-<n>" on 127.0.0.<n+1> with real PostgreSQL 15.
type pgBed struct {
	t     testing.TB
	bin   string
	dir   string
	cred  *syscall.Credential
	ports map[int]int
}

func newPGBed(t testing.TB) *pgBed { return newPGBedAt(t, testbed.PostgresBin(t)) }

// newPGBedAt is a bed whose members run the PostgreSQL programs in bin.
func newPGBedAt(t testing.TB, bin string) *pgBed {
	b := &pgBed{t: t, bin: bin, ports: map[int]int{}}
	dir, err := os.MkdirTemp("", "cairn-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b.dir = dir
	b.cred = testbed.PostgresCredential(t, dir)
	conf := fmt.Sprintf("wal_level = replica\nhot_standby = on\nwal_log_hints = on\nwal_keep_size = 512MB\nmax_wal_senders = 16\nmax_replication_slots = 16\nwal_receiver_status_interval = 1\nhba_file = '%s/pg_hba.conf'\n", dir)
	hba := "local all postgres peer\nlocal all all scram-sha-256\nhost replication replicator 0.0.0.0/0 scram-sha-256\nhost all all 0.0.0.0/0 scram-sha-256\n"
	for name, content := range map[string]string{"postgresql.conf": conf, "pg_hba.conf": hba} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		b.ports[i] = instancetest.FreePort(t, instancetest.HostOf(i))
	}
	return b
}

func (b *pgBed) addr(ord int) string {
	return instancetest.HostOf(ord) + ":" + strconv.Itoa(b.ports[ord])
}

func (b *pgBed) member(ord int, bootstrap string, candidates ...int) *Manager {
	name := "pg-" + strconv.Itoa(ord)
	home := filepath.Join(b.dir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		b.t.Fatal(err)
	}
	if b.cred != nil {
		_ = os.Chown(home, int(b.cred.Uid), int(b.cred.Gid))
	}
	var cands []string
	for _, c := range candidates {
		cands = append(cands, b.addr(c))
	}
	return &Manager{
		Name: name, PGData: filepath.Join(home, "pgdata"), BinDir: b.bin,
		ConfigFile: filepath.Join(b.dir, "postgresql.conf"),
		Settings: map[string]string{
			"listen_addresses": instancetest.HostOf(ord), "port": strconv.Itoa(b.ports[ord]), "unix_socket_directories": home,
		},
		Host: instancetest.HostOf(ord), Port: b.ports[ord], Candidates: cands,
		Config:            Config{Config: instance.Config{Bootstrap: bootstrap}},
		SuperuserPassword: testSuperPW, ReplicationPassword: testReplPW,
		Credential: b.cred, Log: instancetest.Logger(b.t),
	}
}

func (b *pgBed) start(m *Manager, wantRole string) *Server {
	b.t.Helper()
	ctx := context.Background()
	role, initialised, err := m.Prepare(ctx)
	if err != nil {
		b.t.Fatalf("%s: prepare: %v", m.Name, err)
	}
	if role != wantRole {
		b.t.Fatalf("%s starts as %s, want %s", m.Name, role, wantRole)
	}
	s, err := m.Start(ctx, initialised, instancetest.Writer(b.t))
	if err != nil {
		b.t.Fatalf("%s: %v", m.Name, err)
	}
	b.t.Cleanup(func() { s.Kill() })
	return s
}

func (b *pgBed) conn(ord int) *pgx.Conn {
	b.t.Helper()
	c, err := b.dial(context.Background(), ord)
	if err != nil {
		b.t.Fatalf("connect to pg-%d: %v", ord, err)
	}
	b.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (b *pgBed) dial(ctx context.Context, ord int) (*pgx.Conn, error) {
	cfg, _ := pgx.ParseConfig("")
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = instancetest.HostOf(ord), uint16(b.ports[ord]), Superuser, testSuperPW, "postgres"
	return pgx.ConnectConfig(ctx, cfg)
}

func (b *pgBed) streamingTo(ctx context.Context, primary int) (map[string]bool, error) {
	c, err := b.dial(ctx, primary)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, "SELECT application_name FROM pg_stat_replication WHERE state = 'streaming'")
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out, err
}

// waitRows waits until member ord holds want rows in t.
func (b *pgBed) waitRows(ord, want int) {
	b.t.Helper()
	instancetest.Eventually(b.t, 2*time.Minute, fmt.Sprintf("pg-%d holds %d rows", ord, want), func(ctx context.Context) error {
		if n, err := b.count(ctx, ord); err != nil || n != want {
			return fmt.Errorf("%d rows: %v", n, err)
		}
		return nil
	})
}

func (b *pgBed) count(ctx context.Context, ord int) (int, error) {
	c, err := b.dial(ctx, ord)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var n int
	err = c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n)
	return n, err
}

func TestPostgresPrimaryTwoReplicasAndRewind(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	ctx := context.Background()
	b := newPGBed(t)

	// Member 0 of a create step initialises the primary; 1 and 2 clone it.
	pg0 := b.start(b.member(0, "new", 0), StartPrimary)
	b.start(b.member(1, "new", 0), StartReplica)
	b.start(b.member(2, "new", 0), StartReplica)
	instancetest.Eventually(t, 30*time.Second, "both replicas streaming", func(ctx context.Context) error {
		got, err := b.streamingTo(ctx, 0)
		if err != nil || !got["pg-1"] || !got["pg-2"] {
			return fmt.Errorf("streaming: %v %v", got, err)
		}
		return nil
	})
	if _, err := b.conn(0).Exec(ctx, "CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 100)"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []int{1, 2} {
		instancetest.Eventually(t, 30*time.Second, "rows on the replica", func(ctx context.Context) error {
			if n, err := b.count(ctx, r); err != nil || n != 100 {
				return fmt.Errorf("pg-%d has %d rows: %v", r, n, err)
			}
			return nil
		})
	}
	// The passwords never reach a config file PostgreSQL reads.
	auto, _ := os.ReadFile(filepath.Join(b.dir, "pg-1", "pgdata", "postgresql.auto.conf"))
	if len(auto) == 0 || containsAny(string(auto), testReplPW, testSuperPW) {
		t.Errorf("postgresql.auto.conf: %q", auto)
	}

	// The primary dies; pg-1 is promoted and takes a write pg-0 never saw.
	pg0.Kill()
	if _, err := b.conn(1).Exec(ctx, "SELECT pg_promote()"); err != nil {
		t.Fatal(err)
	}
	instancetest.Eventually(t, 30*time.Second, "pg-1 takes writes", func(ctx context.Context) error {
		c, err := b.dial(ctx, 1)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		_, err = c.Exec(ctx, "INSERT INTO t VALUES (101)")
		return err
	})

	// The old primary returns: it is rewound and follows pg-1, never a
	// second primary. As in a container started again, the PID its lock
	// file names is another process's by then (lock.go).
	takePID(t, filepath.Join(b.dir, "pg-0", "pgdata", lockFile))
	back := b.member(0, "new", 1, 0)
	b.start(back, StartReplica)
	var inRecovery bool
	if err := b.conn(0).QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil || !inRecovery {
		t.Fatalf("pg-0 came back as a primary (in recovery=%v, %v)", inRecovery, err)
	}
	instancetest.Eventually(t, 30*time.Second, "pg-0 streams from pg-1 with the new row", func(ctx context.Context) error {
		got, err := b.streamingTo(ctx, 1)
		if err != nil || !got["pg-0"] {
			return fmt.Errorf("streaming to pg-1: %v %v", got, err)
		}
		if n, err := b.count(ctx, 0); err != nil || n != 101 {
			return fmt.Errorf("pg-0 has %d rows: %v", n, err)
		}
		return nil
	})
}

func TestPostgresNeverInitialisesOutsideACreateStep(t *testing.T) {
	b := newPGBed(t)
	for _, m := range []*Manager{b.member(0, "existing", 0), b.member(3, "new", 0)} {
		if _, _, err := m.Prepare(context.Background()); !errors.Is(err, ErrNoPrimary) {
			t.Errorf("%s: got %v, want ErrNoPrimary", m.Name, err)
		}
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestPostgresLabelledReplicaNeverStartsAsPrimary(t *testing.T) {
	ctx := context.Background()
	b := newPGBed(t)
	s := b.start(b.member(0, "new", 0), StartPrimary)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	// The runtime failed over while pg-0 was down and labelled it replica;
	// no primary answers now. pg-0 waits instead of taking writes.
	m := b.member(0, "existing", 1)
	m.RoleLabel = func() string { return "replica" }
	if _, _, err := m.Prepare(ctx); !errors.Is(err, ErrNoPrimary) {
		t.Fatalf("got %v, want ErrNoPrimary", err)
	}
	// Unlabelled (or labelled primary), it restarts as the primary it was.
	m.RoleLabel = func() string { return "primary" }
	if role, _, err := m.Prepare(ctx); err != nil || role != StartPrimary {
		t.Fatalf("role %s, %v", role, err)
	}
}

func TestPostgresPeersAreCheckedBeforeStartingAsPrimary(t *testing.T) {
	ctx := context.Background()
	b := newPGBed(t)
	b.start(b.member(0, "new", 0), StartPrimary)
	b.start(b.member(1, "new", 0), StartReplica)
	// pg-2 has no data and its candidates (the Services) list nobody, but
	// its peers include the running primary: it clones, never initialises.
	m := b.member(2, "new")
	m.Name = "pg-0" // the worst case: it would be allowed to initdb
	m.Peers = func(context.Context) []string { return []string{b.addr(1), b.addr(0)} }
	role, initialised, err := m.Prepare(ctx)
	if err != nil || role != StartReplica || initialised {
		t.Fatalf("role %s initialised %v: %v", role, initialised, err)
	}
}

func TestPostgresDiscardsAnInterruptedClone(t *testing.T) {
	b := newPGBed(t)
	m := b.member(1, "existing", 0)
	partial := m.cloneDir()
	if err := os.MkdirAll(filepath.Join(partial, "base"), 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(partial, "PG_VERSION"), []byte("15\n"), 0o600)
	if _, _, err := m.Prepare(context.Background()); !errors.Is(err, ErrNoPrimary) {
		t.Fatalf("got %v, want ErrNoPrimary (no data, no primary)", err)
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("the interrupted clone is still there: %v", err)
	}
}

// takePID makes the PID a dead server's lock file names a live process
// elsewhere's, as in a container started again after a crash, where the
// instance manager's own threads soon take the old postmaster's PID.
func takePID(t *testing.T, lock string) {
	t.Helper()
	data, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	// The server's own user: PostgreSQL takes a PID it may not signal
	// for another user's, and a stale lock.
	fi, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	pid := sleeper(t, "/", &syscall.Credential{Uid: st.Uid, Gid: st.Gid})
	_, rest, _ := strings.Cut(string(data), "\n")
	if err := os.WriteFile(lock, []byte(strconv.Itoa(pid)+"\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}
}
