package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
)

// reach is how a member answered the runtime's probe.
type reach int

const (
	reachUp reach = iota
	// reachDown: nothing listens (connection refused, the server starting
	// or shutting down), or Kubernetes reports its container stopped.
	reachDown
	// reachTimeout: no answer in time. Overloaded is not dead: a primary
	// that only times out gets longer before a failover.
	reachTimeout
)

func (r reach) String() string { return [...]string{"up", "down", "timeout"}[r] }

// pgProbe is what one member said.
type pgProbe struct {
	Reach      reach
	InRecovery bool
	// Received and Replayed are the WAL positions: the last received and
	// the last replayed on a replica, the current one on a primary.
	Received, Replayed uint64
	Timeline           int
	// Streaming: a replica's WAL receiver streams from a primary.
	Streaming bool
	// Receiving: a replica runs a WAL receiver (streaming, or connecting
	// to its upstream): it may acknowledge a primary's WAL.
	Receiving bool
	// Upstream is a replica's primary_conninfo.
	Upstream string
	// SyncStandbys are, on a primary, the standbys it waits for
	// (pg_stat_replication sync_state sync or quorum); SyncSetting is its
	// synchronous_standby_names.
	SyncStandbys []string
	SyncSetting  string
	// Failsafe is the member's contract.PostgresFailsafeSetting, and
	// WriteTimeline, on a primary, the timeline it writes on (0 on a
	// replica): the failsafe the runtime writes names it (failsafe.go).
	Failsafe      string
	WriteTimeline int64
	// Archive is the member's WAL archiver (pg_stat_archiver).
	Archive archiveStats
	// OldestSegment is, on a primary, the number of the oldest segment
	// in its pg_wal (0: unknown; segment 0 is never written), and
	// SegmentSize the server's wal_segment_size: whether a replica's next
	// WAL is still there (walgone.go).
	OldestSegment uint64
	SegmentSize   int64
	// Starting: the member is down, but a postmaster answers that it is
	// not accepting connections yet (SQLSTATE 57P03 other than shutting
	// down): a server in crash recovery, restarted in place by its
	// instance manager (crash.go).
	Starting bool
	// CrashRestart is, on a server its instance manager restarted in
	// place after a crash, the time of that crash
	// (contract.PostgresCrashRestartSetting); zero otherwise.
	CrashRestart time.Time
	Err          string
}

// archiveStats is what a member's WAL archiver reports. Only a primary
// archives (archive_mode on).
type archiveStats struct {
	// On: archive_mode is on.
	On bool
	// LastArchived is the last segment archived and when; LastFailed the
	// last that failed and when.
	LastArchived, LastFailed     string
	LastArchivedAt, LastFailedAt time.Time
	// Pending are the segments in pg_wal waiting to be archived, and
	// WALBytes all of pg_wal.
	Pending  int
	WALBytes int64
	// WALBound is max_wal_size + wal_keep_size in bytes: what pg_wal
	// stays within unless something holds WAL (an archive that fails or
	// lags, a replication slot).
	WALBound int64
}

// failing: the last attempt failed (no success since the last failure).
func (a archiveStats) failing() bool {
	return a.On && !a.LastFailedAt.IsZero() && a.LastFailedAt.After(a.LastArchivedAt)
}

// probeTimeout bounds one member's probe: connect and query.
const probeTimeout = 1500 * time.Millisecond

var probeSQL = `SELECT pg_is_in_recovery(),
  (CASE WHEN pg_is_in_recovery() THEN COALESCE(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()) ELSE pg_current_wal_lsn() END)::text,
  (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text,
  COALESCE((SELECT received_tli FROM pg_stat_wal_receiver), 0),
  COALESCE((SELECT status = 'streaming' FROM pg_stat_wal_receiver), false),
  EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE pid IS NOT NULL),
  current_setting('primary_conninfo'),
  current_setting('synchronous_standby_names'),
  COALESCE((SELECT string_agg(application_name, ',' ORDER BY application_name) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')), ''),
  current_setting('archive_mode') <> 'off',
  COALESCE(a.last_archived_wal, ''), COALESCE(extract(epoch FROM a.last_archived_time), 0)::float8,
  COALESCE(a.last_failed_wal, ''), COALESCE(extract(epoch FROM a.last_failed_time), 0)::float8,
  -- pg_wal is listed only where it is reported: on an archiving primary.
  CASE WHEN pg_is_in_recovery() OR current_setting('archive_mode') = 'off' THEN 0
    ELSE (SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready') END,
  CASE WHEN pg_is_in_recovery() OR current_setting('archive_mode') = 'off' THEN 0
    ELSE (SELECT COALESCE(sum(size), 0) FROM pg_ls_waldir())::int8 END,
  CASE WHEN pg_is_in_recovery() THEN ''
    ELSE COALESCE((SELECT min(substr(name, 9)) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'), '') END,
  (SELECT setting::int8 FROM pg_settings WHERE name = 'wal_segment_size'),
  (SELECT sum(pg_size_bytes(setting || unit))::int8 FROM pg_settings WHERE name IN ('max_wal_size', 'wal_keep_size')),
  ` + contract.FailsafeReadSQL() + `,
  ` + contract.WriteTimelineSQL + `,
  ` + contract.CrashRestartReadSQL + `
FROM pg_stat_archiver a`

// probeMembers asks every pod's member at once; a pod without an address,
// being deleted, or whose postgres container Kubernetes reports stopped is
// down without asking.
func probeMembers(ctx context.Context, pods []corev1.Pod, cluster, namespace string, port int, auth pgAuth) map[string]pgProbe {
	out := make(map[string]pgProbe, len(pods))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range pods {
		if containerStopped(&p) {
			out[p.Name] = pgProbe{Reach: reachDown, Err: "the pod's postgres container is not running"}
			continue
		}
		wg.Add(1)
		go func(name, ip string) {
			defer wg.Done()
			cfg, err := auth.memberConfig(cluster, namespace, name, ip, port, probeTimeout)
			pr := pgProbe{Reach: reachTimeout}
			if err == nil {
				pr = probe(ctx, cfg)
			} else {
				pr.Err = err.Error()
			}
			mu.Lock()
			out[name] = pr
			mu.Unlock()
		}(p.Name, p.Status.PodIP)
	}
	wg.Wait()
	return out
}

// containerStopped reports what Kubernetes knows: the pod is gone or
// going, has no address, or its postgres container is not running.
func containerStopped(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.PodIP == "" || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == contract.PostgresContainer && c.State.Running == nil {
			return true
		}
	}
	return false
}

func probe(ctx context.Context, cfg *pgx.ConnConfig) pgProbe {
	cctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return pgProbe{Reach: classify(err), Starting: starting(err), Err: err.Error()}
	}
	defer conn.Close(context.Background())
	var pr pgProbe
	var recv, replay, syncs, oldest, crash string
	var archivedAt, failedAt float64
	a := &pr.Archive
	err = conn.QueryRow(cctx, probeSQL).Scan(&pr.InRecovery, &recv, &replay, &pr.Timeline, &pr.Streaming, &pr.Receiving, &pr.Upstream, &pr.SyncSetting, &syncs,
		&a.On, &a.LastArchived, &archivedAt, &a.LastFailed, &failedAt, &a.Pending, &a.WALBytes, &oldest, &pr.SegmentSize, &a.WALBound,
		&pr.Failsafe, &pr.WriteTimeline, &crash)
	if err != nil {
		return pgProbe{Reach: classify(err), Starting: starting(err), Err: err.Error()}
	}
	// A value that does not parse is no crash the runtime can record.
	pr.CrashRestart, _ = contract.ParseCrashTime(crash)
	pr.OldestSegment = segmentNumber(oldest, pr.SegmentSize)
	a.LastArchivedAt, a.LastFailedAt = epoch(archivedAt), epoch(failedAt)
	pr.Received, _ = parseLSN(recv)
	pr.Replayed, _ = parseLSN(replay)
	if syncs != "" {
		pr.SyncStandbys = strings.Split(syncs, ",")
	}
	return pr
}

// epoch is a time SQL gave in seconds since 1970; 0 is none.
func epoch(s float64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s*1e9)).UTC()
}

// connect connects to a member as the superuser.
func (p *pgPass) connect(ctx context.Context, member, ip string) (*pgx.Conn, error) {
	cfg, err := p.auth.memberConfig(p.r.Cluster, p.r.Namespace, member, ip, p.r.Port, probeTimeout)
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// classify tells a server that is not there (refused, starting, shutting
// down) from one that does not answer in time.
func classify(err error) reach {
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return reachDown
	case errors.As(err, &pgErr) && (pgErr.Code == "57P03" || pgErr.Code == "57P01"):
		return reachDown // cannot_connect_now, admin_shutdown
	}
	if strings.Contains(err.Error(), "connection refused") {
		return reachDown // pgconn may flatten the syscall error into text
	}
	return reachTimeout
}

// starting tells, of a server that is down, one whose postmaster
// answers that it is starting (crash recovery, or recovery before a
// consistent state: cannot_connect_now) from one shutting down or not
// there. The shutdown is told by PostgreSQL's message, in English unless
// the spec sets lc_messages: translated, a shutdown counts as starting,
// which only makes the runtime wait longer (maybeFailover, stillWrites).
func starting(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57P03" && !strings.Contains(pgErr.Message, "shutting down")
}

// parseLSN reads PostgreSQL's X/Y notation.
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("lsn %q", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("lsn %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("lsn %q: %w", s, err)
	}
	return h<<32 | l, nil
}

func formatLSN(v uint64) string { return fmt.Sprintf("%X/%X", v>>32, v&0xffffffff) }
