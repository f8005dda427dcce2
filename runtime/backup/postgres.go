package backup

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-dev/cairn/planner/contract"
)

// PostgresSource takes a base backup of one PostgreSQL member through the
// streaming replication protocol, as pg_basebackup -Ft -X fetch does: one
// tar of the data directory that includes the WAL from the backup's start
// to its end, so the copy starts consistent on its own.
type PostgresSource struct {
	// Member is the member's name; Host and Port reach it.
	Member, Host string
	Port         int
	// User must have the REPLICATION attribute; Password is never logged.
	User, Password string
	// TLS, when set, is the only way the member is reached: its
	// certificate verified, no plain fallback. Nil connects as libpq's
	// sslmode=prefer does.
	TLS *tls.Config
}

// Stream implements Source.
func (s PostgresSource) Stream(ctx context.Context, w io.Writer, m *Manifest) error {
	cfg, err := pgconn.ParseConfig("sslmode=prefer replication=true dbname=replication")
	if err != nil {
		return err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password = s.Host, uint16(s.Port), s.User, s.Password
	cfg.RequireAuth = contract.PostgresRequireAuth
	if s.TLS != nil {
		cfg.TLSConfig, cfg.Fallbacks = s.TLS, nil
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s for a base backup: %w", s.Member, err)
	}
	defer conn.Close(context.Background())
	m.Source, m.Version = s.Member, conn.ParameterStatus("server_version")
	major, err := PostgresMajor(m.Version)
	if err != nil {
		return fmt.Errorf("base backup of %s: %w", s.Member, err)
	}
	system, segSize, err := identify(ctx, conn)
	if err != nil {
		return fmt.Errorf("base backup of %s: %w", s.Member, err)
	}
	// The backup's messages are read off the connection directly
	// (wireReader); SyncConn makes sure pgx holds nothing it read ahead.
	if err := conn.SyncConn(ctx); err != nil {
		return fmt.Errorf("base backup of %s: %w", s.Member, err)
	}
	bb := &baseBackup{w: w, legacy: major < 15}
	if err := bb.run(ctx, conn.Conn()); err != nil {
		return fmt.Errorf("base backup of %s: %w", s.Member, err)
	}
	m.Postgres = &PostgresDetail{StartLSN: bb.start, EndLSN: bb.end, Timeline: bb.timeline, SystemID: system, WALSegmentSize: segSize}
	return nil
}

// identify reads the system identifier (IDENTIFY_SYSTEM) and the
// wal_segment_size of a replication connection's server: what ties a base
// backup to its WAL archive.
func identify(ctx context.Context, conn *pgconn.PgConn) (system string, segSize int64, err error) {
	// A replication connection takes one command a query.
	var rows [2][][]byte
	for i, q := range []string{"IDENTIFY_SYSTEM", "SHOW wal_segment_size"} {
		res, err := conn.Exec(ctx, q).ReadAll()
		if err != nil {
			return "", 0, fmt.Errorf("%s: %w", q, err)
		}
		if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) == 0 {
			return "", 0, fmt.Errorf("%s returned no row", q)
		}
		rows[i] = res[0].Rows[0]
	}
	system = string(rows[0][0])
	if _, err := strconv.ParseUint(system, 10, 64); err != nil {
		return "", 0, fmt.Errorf("system identifier %q: %w", system, err)
	}
	if segSize, err = parseSize(string(rows[1][0])); err != nil {
		return "", 0, fmt.Errorf("wal_segment_size: %w", err)
	}
	return system, segSize, nil
}

// parseSize reads a size as SHOW prints one: "16MB", "1GB", "512kB".
func parseSize(v string) (int64, error) {
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"kB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			x, err := strconv.ParseInt(n, 10, 64)
			if err != nil || x <= 0 {
				return 0, fmt.Errorf("%q is not a size", v)
			}
			return x * u.mul, nil
		}
	}
	return 0, fmt.Errorf("%q is not a size", v)
}

// PostgresMajor is the major of a server_version parameter ("15.20",
// "13.23 (Debian 13.23-0+deb11u4)", "18beta1"), as a backup's manifest
// records it; a version older than 13 is an error.
func PostgresMajor(version string) (int, error) {
	i := 0
	for i < len(version) && version[i] >= '0' && version[i] <= '9' {
		i++
	}
	major, err := strconv.Atoi(version[:i])
	if err != nil || major < 13 {
		return 0, fmt.Errorf("the server reports version %q, which is no PostgreSQL major cairn can back up (13 and later)", version)
	}
	return major, nil
}

// HostPort joins a member's address for messages.
func (s PostgresSource) HostPort() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }
