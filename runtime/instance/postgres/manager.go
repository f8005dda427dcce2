package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// ErrNoPrimary: a member without data found no primary to clone from and
// may not initialise one. The caller waits and tries again.
var ErrNoPrimary = errors.New("no primary answers and this member may not initialise the cluster")

// Roles a PostgreSQL member starts in: those of its role label.
const (
	StartPrimary = contract.RolePrimary
	StartReplica = contract.RoleReplica
)

// Users cairn creates in every cluster.
const (
	Superuser       = contract.PostgresSuperuser
	ReplicationUser = contract.PostgresReplicationUser
)

// Manager is the instance manager of one PostgreSQL member.
//
// How it starts, each way in its own file:
//   - no data, a primary answers: clone it with pg_basebackup and follow it
//     (clone.go);
//   - no data, member 0 of a create step (bootstrap=new) and no primary:
//     initdb, start as the primary, create the replication user
//     (initdb.go), or restore the create step's backup (restore.go);
//   - data on another major than the server's (left from before a major
//     upgrade) and a primary answers: move it aside and clone (clone.go);
//   - data of a former primary while another member is primary: pg_rewind
//     onto the primary's timeline and follow it, never a second primary
//     (follow.go);
//   - data of a replica: follow the current primary (follow.go), or,
//     when the catch-up watch found it cannot catch up (its next WAL gone
//     from the primary and the archive), re-clone it, or (it holds WAL
//     past where the primary's timeline forked off its own) rewind it,
//     re-cloning only if the rewind fails (reclone.go);
//   - otherwise start from the data as it is, as the primary once its role
//     label is confirmed.
//
// Member 0's upgrade to a new major runs before, in its own init
// container (upgrade.go).
type Manager struct {
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
	// Confirm reads this pod's role label through the API server, by a
	// consistent read (APIRoleLabel). A primary confirms it every
	// ConfirmEvery (a quarter of LeaseTTL when 0), and at once when the
	// runtime nudges it (contract.PostgresConfirmChannel): labelled fenced
	// or replica, it stops and comes back as a replica; unconfirmed for
	// LeaseTTL (contract.PostgresLeaseTTL when 0) since the last
	// confirmation was sent, and not followed by every other member it
	// was told of for as long (failsafe.go), it stops (lease.go). With data, a member starts as a primary only once
	// confirmed. Nil confirms nothing (RoleLabel alone decides).
	Confirm      func(ctx context.Context) (string, error)
	ConfirmEvery time.Duration
	LeaseTTL     time.Duration
	Config       Config
	// SuperuserPassword and ReplicationPassword come from the Secrets.
	SuperuserPassword, ReplicationPassword string
	// Namespace is the pod's: the names certificates are verified under
	// hold it.
	Namespace string
	// TLSDir holds the member's certificates (contract.PostgresTLSDir in
	// a pod), Certs keeps them current from the runtime's Secrets every
	// CertsEvery (a minute when 0), and TLSMode reads the cluster's TLS
	// mode now (nil: Config.TLS). See tls.go.
	TLSDir     string
	Certs      CertSync
	CertsEvery time.Duration
	TLSMode    func() string
	// Credential runs the PostgreSQL programs as another user (when the
	// manager itself runs as root, as in tests); nil in a pod.
	Credential *syscall.Credential
	Log        *slog.Logger
	// Cluster is the cluster's name, the folder of its WAL archive.
	Cluster string
	// WALSocket is where ServeWAL serves archive_command and
	// restore_command, and WALCommand the command that reaches it (run
	// with push|fetch %f %p); see walserver.go.
	WALSocket, WALCommand string

	// CatchUpEvery is how often a replica checks that it can catch up
	// (catchup.go; 15 s when 0), and RecloneBackoff the first wait
	// between two re-clones (a minute when 0), doubling after each.
	CatchUpEvery, RecloneBackoff time.Duration
	// CrashLoopWindow: a server that crashes again less than this after
	// its instance manager restarted it in place is not restarted in
	// place again (crash.go); contract.PostgresCrashLoopWindow when 0.
	CrashLoopWindow time.Duration
	// Stops records a primary's clean stop for the runtime, and clears
	// it when the server starts (cleanstop.go); nil records nothing.
	Stops StopRecorder

	wal *WALServer
	rc  recloneState
	// recovered is the time of the crash the server's next (or current)
	// start recovers from in place; zero for any other start (crash.go).
	recovered time.Time
	// confirmedAt is when Prepare's confirmation was sent: the primary's
	// lease starts there (watchdog.go).
	confirmedAt time.Time
	// nudges, in tests, stands in for listenNudges, and readFailsafe for
	// the failsafe's reads of the member's own server.
	nudges       func(ctx context.Context, out chan<- struct{})
	readFailsafe func(ctx context.Context) (failsafeRead, error)
}

// Prepare makes the data directory ready and says in which role the
// server starts. initialised is true when it ran initdb: Start then
// creates the replication user.
func (p *Manager) Prepare(ctx context.Context) (role string, initialised bool, err error) {
	p.confirmedAt = time.Time{}
	role, initialised, err = p.prepare(ctx)
	if err == nil {
		err = p.linkConfig()
	}
	return role, initialised, err
}

// linkConfig makes the data directory's postgresql.conf include the
// rendered one, so every start reads it: the server's, and the
// single-user recovery pg_rewind runs (which needs wal_keep_size).
func (p *Manager) linkConfig() error { return p.linkConfigIn(p.PGData) }

// linkConfigIn writes the including postgresql.conf into data directory
// dir.
func (p *Manager) linkConfigIn(dir string) error {
	if p.ConfigFile == "" {
		return nil
	}
	return p.writeOwned(filepath.Join(dir, contract.PostgresConfFile),
		"# Written by cairn: the settings are rendered from the spec.\ninclude '"+strings.ReplaceAll(p.ConfigFile, "'", "''")+"'\n")
}

func (p *Manager) prepare(ctx context.Context) (role string, initialised bool, err error) {
	ord, err := contract.PodOrdinal(p.Name)
	if err != nil {
		return "", false, err
	}
	// With TLS on, the server cannot start without its certificates, and
	// the other members admit this one only over TLS.
	if _, err := p.syncCerts(ctx); err != nil {
		return "", false, err
	}
	hasData, err := p.openData()
	if err != nil {
		return "", false, err
	}
	primary := p.findPrimary(ctx, p.Candidates)
	if primary == "" && p.Peers != nil && (hasData || ord == 0) {
		// Before starting as a primary (or initialising one), look at every
		// member, ready or not: the Services list ready pods only.
		primary = p.findPrimary(ctx, p.Peers(ctx))
	}
	if hasData {
		if hasData, err = p.dataOfThisMajor(primary); err != nil {
			return "", false, err
		}
	}
	if !hasData {
		return p.prepareEmpty(ctx, ord, primary)
	}
	return p.prepareData(ctx, primary)
}

// openData discards what an interrupted clone left and reports whether
// the data directory holds data.
func (p *Manager) openData() (bool, error) {
	if err := p.discardPartialClone(); err != nil {
		return false, err
	}
	hasData, err := instance.Exists(filepath.Join(p.PGData, "PG_VERSION"))
	if err != nil || !hasData {
		return hasData, err
	}
	// PostgreSQL refuses a data directory others can read; a volume's
	// fsGroup may have widened it.
	if err := os.Chmod(p.PGData, 0o700); err != nil {
		return false, fmt.Errorf("data directory permissions: %w", err)
	}
	// Nothing of this member runs while it prepares: a lock file left by
	// a server that died with its container would stop the next start
	// (lock.go).
	why, err := removeStaleLock(p.PGData)
	if err != nil {
		return false, err
	}
	if why != "" {
		p.Log.Info("removed a stale "+lockFile, "member", p.Name, "why", why)
	}
	return true, nil
}

// prepareEmpty brings up a member without data: a clone of the primary,
// or, as member 0 of a create step, a new cluster (initdb or a restore).
func (p *Manager) prepareEmpty(ctx context.Context, ord int, primary string) (role string, initialised bool, err error) {
	create := ord == 0 && p.Config.Bootstrap == contract.BootstrapNew
	switch {
	case primary != "":
		return StartReplica, false, p.clone(ctx, primary)
	case create && p.Config.Restore != nil:
		return StartPrimary, true, p.restorePostgres(ctx)
	case create:
		return StartPrimary, true, p.initdb(ctx)
	}
	return "", false, ErrNoPrimary
}

// prepareData brings up a member from its data: following the primary
// that answers (rewound first if it was a primary itself), as the replica
// it was, or as the primary once confirmed.
func (p *Manager) prepareData(ctx context.Context, primary string) (role string, initialised bool, err error) {
	standby := p.isStandby()
	switch {
	case primary != "" && !standby:
		p.Log.Warn("a former primary returns while another member is primary: rewinding it to follow", "member", p.Name, "primary", primary)
		if err := p.rewind(ctx, primary); err != nil {
			return "", false, err
		}
		return StartReplica, false, p.follow(primary)
	case primary != "":
		if recloned, err := p.prepareReclone(ctx, primary); recloned || err != nil {
			return StartReplica, false, err
		}
		return StartReplica, false, p.follow(primary)
	case standby:
		if pending, why, _ := p.rc.take(); pending {
			p.Log.Warn("re-clone called off: no primary answers; keeping the data", "member", p.Name, "reason", why)
		}
		return StartReplica, false, nil
	}
	if p.RoleLabel != nil {
		if label := p.RoleLabel(); contract.Follows(label) {
			// The runtime moved the primary role away while this member
			// was down: it waits to follow the new primary, never takes
			// writes.
			return "", false, fmt.Errorf("%s is labelled %s and no primary answers: %w", p.Name, label, ErrNoPrimary)
		}
	}
	return StartPrimary, false, p.confirmPrimary(ctx)
}

// confirmPrimary: a member with data starts as a primary only when the
// API server says its label is primary (or not set yet, as before the
// runtime first labels a new cluster).
func (p *Manager) confirmPrimary(ctx context.Context) error {
	if p.Confirm == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sent := time.Now()
	label, err := p.Confirm(cctx)
	switch {
	case err != nil:
		return fmt.Errorf("%s cannot confirm its primary role through the API server (%v): %w", p.Name, err, ErrNoPrimary)
	case contract.Follows(label):
		return fmt.Errorf("%s is labelled %s and no primary answers: %w", p.Name, label, ErrNoPrimary)
	}
	p.confirmedAt = sent
	return nil
}
