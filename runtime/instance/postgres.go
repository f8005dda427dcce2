package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPrimary: a member without data found no primary to clone from and
// may not initialise one. The caller waits and tries again.
var ErrNoPrimary = errors.New("no primary answers and this member may not initialise the cluster")

// Roles a PostgreSQL member starts in.
const (
	StartPrimary = "primary"
	StartReplica = "replica"
)

// Users cairn creates in every cluster.
const (
	Superuser       = "postgres"
	ReplicationUser = "replicator"
)

// Postgres is the instance manager of one PostgreSQL member.
//
// How it starts:
//   - no data, a primary answers: clone it with pg_basebackup and follow it;
//   - no data, member 0 of a create step (bootstrap=new) and no primary:
//     initdb, start as the primary, create the replication user;
//   - data on another major than the server's (left from before a major
//     upgrade) and a primary answers: move it aside and clone;
//   - data of a former primary while another member is primary: pg_rewind
//     onto the primary's timeline and follow it, never a second primary;
//   - data of a replica: follow the current primary;
//   - otherwise start from the data as it is.
type Postgres struct {
	// Name is the member's name: its pod name, <cluster>-<ordinal>.
	Name   string
	PGData string
	// BinDir holds postgres, initdb, pg_basebackup and pg_rewind.
	BinDir string
	// ConfigFile is the rendered postgresql.conf; the data directory's
	// postgresql.conf includes it.
	ConfigFile string
	// Settings are extra -c settings (tests set addresses and ports).
	Settings map[string]string
	// Host and Port are where this member's server listens.
	Host string
	Port int
	// Candidates are host:port addresses to look for the primary at, in
	// order: the <cluster>-rw Service, then member 0.
	Candidates []string
	// Peers lists every member's host:port, ready or not (the headless
	// Service's addresses); a member checks them all before it would start
	// as a primary. Nil checks only Candidates.
	Peers func(ctx context.Context) []string
	// RoleLabel reads the role the runtime gave this pod (the downward
	// API's labels file); a member labelled replica or fenced never starts
	// as a primary on its own. Nil means no label.
	RoleLabel func() string
	// Confirm reads this pod's role label through the API server. A
	// primary confirms it every ConfirmEvery: labelled fenced or replica,
	// it stops and comes back as a replica; unconfirmed for LeaseTTL, it
	// stops. With data, a member starts as a primary only once confirmed.
	// Nil confirms nothing (RoleLabel alone decides).
	Confirm      func(ctx context.Context) (string, error)
	ConfirmEvery time.Duration
	LeaseTTL     time.Duration
	Config       Config
	// SuperuserPassword and ReplicationPassword come from the Secrets.
	SuperuserPassword, ReplicationPassword string
	// Credential runs the PostgreSQL programs as another user (when the
	// manager itself runs as root, as in tests); nil in a pod.
	Credential *syscall.Credential
	Log        *slog.Logger
}

// Prepare makes the data directory ready and says in which role the
// server starts. initialised is true when it ran initdb: Start then
// creates the replication user.
func (p *Postgres) Prepare(ctx context.Context) (role string, initialised bool, err error) {
	role, initialised, err = p.prepare(ctx)
	if err == nil {
		err = p.linkConfig()
	}
	return role, initialised, err
}

// linkConfig makes the data directory's postgresql.conf include the
// rendered one, so every start reads it: the server's, and the
// single-user recovery pg_rewind runs (which needs wal_keep_size).
func (p *Postgres) linkConfig() error { return p.linkConfigIn(p.PGData) }

// linkConfigIn writes the including postgresql.conf into data directory
// dir.
func (p *Postgres) linkConfigIn(dir string) error {
	if p.ConfigFile == "" {
		return nil
	}
	return p.writeOwned(filepath.Join(dir, "postgresql.conf"),
		"# Written by cairn: the settings are rendered from the spec.\ninclude '"+strings.ReplaceAll(p.ConfigFile, "'", "''")+"'\n")
}

func (p *Postgres) prepare(ctx context.Context) (role string, initialised bool, err error) {
	ord, err := ordinal(p.Name)
	if err != nil {
		return "", false, err
	}
	if err := p.discardPartialClone(); err != nil {
		return "", false, err
	}
	hasData, err := dirHas(filepath.Join(p.PGData, "PG_VERSION"))
	if err != nil {
		return "", false, err
	}
	if hasData {
		// PostgreSQL refuses a data directory others can read; a volume's
		// fsGroup may have widened it.
		if err := os.Chmod(p.PGData, 0o700); err != nil {
			return "", false, fmt.Errorf("data directory permissions: %w", err)
		}
	}
	primary := p.findPrimary(ctx, p.Candidates)
	if primary == "" && p.Peers != nil && (hasData || ord == 0) {
		// Before starting as a primary (or initialising one), look at every
		// member, ready or not: the Services list ready pods only.
		primary = p.findPrimary(ctx, p.Peers(ctx))
	}
	if hasData {
		if stale, err := p.staleMajor(); err != nil {
			return "", false, err
		} else if stale && primary != "" {
			if err := p.moveAside(); err != nil {
				return "", false, err
			}
			hasData = false
		} else if stale {
			return "", false, fmt.Errorf("%s holds data of another PostgreSQL major and no primary answers to clone from", p.PGData)
		}
	}
	switch {
	case !hasData && primary != "":
		return StartReplica, false, p.clone(ctx, primary)
	case !hasData && ord == 0 && p.Config.Bootstrap == "new" && p.Config.Restore != nil:
		return StartPrimary, true, p.restorePostgres(ctx)
	case !hasData && ord == 0 && p.Config.Bootstrap == "new":
		return StartPrimary, true, p.initdb(ctx)
	case !hasData:
		return "", false, ErrNoPrimary
	case primary != "" && !p.isStandby():
		if err := p.rewind(ctx, primary); err != nil {
			return "", false, err
		}
		return StartReplica, false, p.follow(primary)
	case primary != "":
		return StartReplica, false, p.follow(primary)
	case p.isStandby():
		return StartReplica, false, nil
	case p.RoleLabel != nil && (p.RoleLabel() == "replica" || p.RoleLabel() == "fenced"):
		// The runtime moved the primary role away while this member was
		// down: it waits to follow the new primary, never takes writes.
		return "", false, fmt.Errorf("%s is labelled %s and no primary answers: %w", p.Name, p.RoleLabel(), ErrNoPrimary)
	}
	return StartPrimary, false, p.confirmPrimary(ctx)
}

// confirmPrimary: a member with data starts as a primary only when the
// API server says its label is primary (or not set yet, as before the
// runtime first labels a new cluster).
func (p *Postgres) confirmPrimary(ctx context.Context) error {
	if p.Confirm == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	label, err := p.Confirm(cctx)
	switch {
	case err != nil:
		return fmt.Errorf("%s cannot confirm its primary role through the API server (%v): %w", p.Name, err, ErrNoPrimary)
	case label == "replica" || label == "fenced":
		return fmt.Errorf("%s is labelled %s and no primary answers: %w", p.Name, label, ErrNoPrimary)
	}
	return nil
}

// findPrimary returns the first of addrs that accepts connections and is
// not in recovery, or "".
func (p *Postgres) findPrimary(ctx context.Context, addrs []string) string {
	self := p.Host + ":" + strconv.Itoa(p.Port)
	for _, c := range addrs {
		if c == self {
			continue
		}
		inRecovery, err := p.query(ctx, c, "SELECT pg_is_in_recovery()")
		if err == nil && !inRecovery {
			return c
		}
		p.Log.Debug("no primary at candidate", "candidate", c, "err", err)
	}
	return ""
}

func (p *Postgres) query(ctx context.Context, hostport, sql string) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := p.connect(cctx, hostport)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var v bool
	err = conn.QueryRow(cctx, sql).Scan(&v)
	return v, err
}

// exec runs a statement on a member as the superuser.
func (p *Postgres) exec(ctx context.Context, hostport, sql string) error {
	conn, err := p.connect(ctx, hostport)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func (p *Postgres) connect(ctx context.Context, hostport string) (*pgx.Conn, error) {
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = host, uint16(port), Superuser, p.SuperuserPassword, "postgres"
	cfg.ConnectTimeout = 3 * time.Second
	return pgx.ConnectConfig(ctx, cfg)
}

func (p *Postgres) clone(ctx context.Context, primary string) error {
	host, port, err := splitHostPort(primary)
	if err != nil {
		return err
	}
	// Clone beside the data directory and move it in only when complete:
	// an interrupted clone never looks like data.
	tmp := p.cloneDir()
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := p.ensureDir(tmp); err != nil {
		return err
	}
	p.Log.Info("cloning from the primary", "member", p.Name, "primary", primary)
	err = p.run(ctx, []string{"PGPASSWORD=" + p.ReplicationPassword}, "pg_basebackup",
		"-h", host, "-p", strconv.Itoa(port), "-U", ReplicationUser, "-D", tmp,
		"-X", "stream", "--checkpoint=fast", "--no-password")
	if err != nil {
		return fmt.Errorf("clone from %s: %w", primary, err)
	}
	if err := os.RemoveAll(p.PGData); err != nil {
		return err
	}
	if err := os.Rename(tmp, p.PGData); err != nil {
		return fmt.Errorf("clone from %s: %w", primary, err)
	}
	return p.follow(primary)
}

func (p *Postgres) initdb(ctx context.Context) error {
	if err := p.ensureDir(p.PGData); err != nil {
		return err
	}
	pw := filepath.Join(filepath.Dir(p.PGData), ".cairn-initdb-pw")
	if err := p.writeOwned(pw, p.SuperuserPassword+"\n"); err != nil {
		return err
	}
	defer os.Remove(pw)
	p.Log.Info("initialising the cluster", "member", p.Name)
	return p.run(ctx, nil, "initdb", "-D", p.PGData, "--username", Superuser, "--pwfile", pw,
		"--auth-local", "peer", "--auth-host", "scram-sha-256", "--encoding", "UTF8", "--data-checksums")
}

// rewind brings a former primary onto the current primary's timeline.
func (p *Postgres) rewind(ctx context.Context, primary string) error {
	host, port, err := splitHostPort(primary)
	if err != nil {
		return err
	}
	p.Log.Warn("a former primary returns while another member is primary: rewinding it to follow", "member", p.Name, "primary", primary)
	// pg_rewind reads the source's timeline from its control file, which a
	// just-promoted primary updates only at its next checkpoint.
	if err := p.exec(ctx, primary, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint on %s before pg_rewind: %w", primary, err)
	}
	src := fmt.Sprintf("host=%s port=%d user=%s dbname=postgres", host, port, Superuser)
	if err := p.linkConfig(); err != nil {
		return err
	}
	if err := p.run(ctx, []string{"PGPASSWORD=" + p.SuperuserPassword}, "pg_rewind",
		"--target-pgdata", p.PGData, "--source-server", src); err != nil {
		return fmt.Errorf("pg_rewind from %s: %w", primary, err)
	}
	return nil
}

// follow makes the data directory a standby of primary: standby.signal,
// and primary_conninfo in postgresql.auto.conf with the password in a
// passfile on the volume, never in the config.
func (p *Postgres) follow(primary string) error {
	host, port, err := splitHostPort(primary)
	if err != nil {
		return err
	}
	pass := p.passfile()
	if err := p.writeOwned(pass, fmt.Sprintf("*:*:*:%s:%s\n", ReplicationUser, pgpassEscape(p.ReplicationPassword))); err != nil {
		return err
	}
	conninfo := fmt.Sprintf("host=%s port=%d user=%s passfile=%s application_name=%s", host, port, ReplicationUser, pass, p.Name)
	auto := filepath.Join(p.PGData, "postgresql.auto.conf")
	old, err := os.ReadFile(auto)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(old), "\n"), "\n") {
		if l != "" && !strings.HasPrefix(strings.TrimSpace(l), "primary_conninfo") {
			lines = append(lines, l)
		}
	}
	lines = append(lines, "primary_conninfo = '"+strings.ReplaceAll(conninfo, "'", "''")+"'")
	if err := p.writeOwned(auto, strings.Join(lines, "\n")+"\n"); err != nil {
		return err
	}
	return p.writeOwned(filepath.Join(p.PGData, "standby.signal"), "")
}

func (p *Postgres) cloneDir() string { return strings.TrimRight(p.PGData, "/") + ".cloning" }

// discardPartialClone removes what an interrupted clone left: it was never
// data, only a copy in progress.
func (p *Postgres) discardPartialClone() error {
	if err := os.RemoveAll(p.cloneDir()); err != nil {
		return fmt.Errorf("remove an interrupted clone: %w", err)
	}
	return nil
}

func (p *Postgres) passfile() string { return filepath.Join(filepath.Dir(p.PGData), ".cairn-pgpass") }

func (p *Postgres) isStandby() bool {
	ok, _ := dirHas(filepath.Join(p.PGData, "standby.signal"))
	return ok
}

// staleMajor reports whether the data directory is of another major than
// the server binary.
func (p *Postgres) staleMajor() (bool, error) {
	data, err := os.ReadFile(filepath.Join(p.PGData, "PG_VERSION"))
	if err != nil {
		return false, err
	}
	out, err := exec.Command(p.bin("postgres"), "--version").Output()
	if err != nil {
		return false, fmt.Errorf("postgres --version: %w", err)
	}
	fields := strings.Fields(string(out)) // postgres (PostgreSQL) 15.18 ...
	if len(fields) < 3 {
		return false, fmt.Errorf("postgres --version printed %q", out)
	}
	major, _, _ := strings.Cut(fields[2], ".")
	return strings.TrimSpace(string(data)) != major, nil
}

func (p *Postgres) moveAside() error {
	return moveAside(p.PGData, p.Log.With("member", p.Name), "data directory is of another major; keeping it aside and cloning")
}

func (p *Postgres) bin(name string) string {
	if p.BinDir == "" {
		return name
	}
	return filepath.Join(p.BinDir, name)
}

// run runs a PostgreSQL program as the member's user; extraEnv carries
// passwords to it without a command line or a log line.
func (p *Postgres) run(ctx context.Context, extraEnv []string, name string, args ...string) error {
	return p.runIn(ctx, "", extraEnv, name, args...)
}

// runIn runs a PostgreSQL program in directory dir.
func (p *Postgres) runIn(ctx context.Context, dir string, extraEnv []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, p.bin(name), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.Credential}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (p *Postgres) ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return p.chown(dir)
}

// writeOwned writes a file readable by the member's user only (also when
// it existed with wider permissions: libpq ignores a passfile others can
// read).
func (p *Postgres) writeOwned(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	return p.chown(path)
}

func (p *Postgres) chown(path string) error {
	if p.Credential == nil {
		return nil
	}
	return os.Chown(path, int(p.Credential.Uid), int(p.Credential.Gid))
}

func splitHostPort(hp string) (string, int, error) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("address %q has no port", hp)
	}
	port, err := strconv.Atoi(hp[i+1:])
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", hp, err)
	}
	return hp[:i], port, nil
}

func pgpassEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, ":", `\:`).Replace(s)
}
