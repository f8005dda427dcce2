package backup

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
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
	bb := &baseBackup{conn: conn, w: w, legacy: major < 15}
	if err := bb.run(ctx); err != nil {
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

// baseBackup reads one BASE_BACKUP exchange: the start position, the
// tablespaces, the archives, and the end position. The archives come as
// PostgreSQL 15 and later send them, one CopyOut of 'n'/'d'/'p' messages
// (legacy false), or as 13 and 14 do (legacy true): one CopyOut per
// tablespace whose data is the tar itself, without the two empty blocks
// that end a tar file.
type baseBackup struct {
	conn       *pgconn.PgConn
	w          io.Writer
	legacy     bool
	start, end string
	timeline   int64
	results    int
	archives   int
	// tail is the last tarBlock*2 bytes of a legacy archive, to end it.
	tail []byte
}

// The command in each grammar: a fast checkpoint, the WAL from start to
// end inside the data directory's tar, no manifest, and no wait for that
// WAL to be archived: the backup holds it, so a failing archive never
// holds up the backups that are the way back from it.
const (
	baseBackupCommand       = "BASE_BACKUP (LABEL 'cairn', CHECKPOINT 'fast', WAL true, WAIT false, MANIFEST 'no')"
	legacyBaseBackupCommand = "BASE_BACKUP LABEL 'cairn' FAST WAL NOWAIT"
)

// tarEnd is the end of a tar file: two empty 512-byte blocks.
const tarEnd = 1024

func (b *baseBackup) command() string {
	if b.legacy {
		return legacyBaseBackupCommand
	}
	return baseBackupCommand
}

func (b *baseBackup) run(ctx context.Context) error {
	b.conn.Frontend().Send(&pgproto3.Query{String: b.command()})
	if err := b.conn.Frontend().Flush(); err != nil {
		return err
	}
	for {
		msg, err := b.conn.ReceiveMessage(ctx)
		if err != nil {
			return err
		}
		switch msg := msg.(type) {
		case *pgproto3.DataRow:
			if err := b.row(msg); err != nil {
				return err
			}
		case *pgproto3.CommandComplete:
			b.results++
		case *pgproto3.CopyOutResponse:
			if err := b.copyOut(); err != nil {
				return err
			}
		case *pgproto3.CopyData:
			if err := b.copyData(msg.Data); err != nil {
				return err
			}
		case *pgproto3.CopyDone:
			if err := b.copyDone(); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			return pgconn.ErrorResponseToPgError(msg)
		case *pgproto3.ReadyForQuery:
			if b.end == "" || b.archives == 0 {
				return errors.New("the server ended the backup early")
			}
			return nil
		}
	}
}

// row reads the start position (first result set) and the end position
// (last result set); the tablespace list in between is checked through
// the archives that follow it.
func (b *baseBackup) row(r *pgproto3.DataRow) error {
	if b.results == 1 || len(r.Values) < 2 {
		return nil
	}
	lsn := string(r.Values[0])
	tli, err := strconv.ParseInt(string(r.Values[1]), 10, 64)
	if err != nil {
		return fmt.Errorf("timeline %q: %w", r.Values[1], err)
	}
	if b.results == 0 {
		b.start, b.timeline = lsn, tli
	} else {
		b.end = lsn
	}
	return nil
}

// copyOut starts an archive in the legacy framing: one tablespace each,
// the data directory's last.
func (b *baseBackup) copyOut() error {
	if !b.legacy {
		return nil
	}
	if b.results != 2 {
		return errors.New("archive data before the tablespace list")
	}
	b.archives++
	if b.archives > 1 {
		return errors.New("a second archive: tablespaces outside the data directory are not supported")
	}
	return nil
}

// copyDone ends a legacy archive with the empty blocks the server leaves
// out, unless it sent them.
func (b *baseBackup) copyDone() error {
	if !b.legacy || b.archives == 0 {
		return nil
	}
	if len(b.tail) == tarEnd && !slices.ContainsFunc(b.tail, func(c byte) bool { return c != 0 }) {
		return nil
	}
	_, err := b.w.Write(make([]byte, tarEnd))
	return err
}

func (b *baseBackup) copyData(d []byte) error {
	if b.legacy {
		return b.legacyData(d)
	}
	if len(d) == 0 {
		return errors.New("an empty CopyData message")
	}
	switch d[0] {
	case 'n':
		b.archives++
		if b.archives > 1 {
			name, _, _ := strings.Cut(string(d[1:]), "\x00")
			return fmt.Errorf("a second archive %q: tablespaces outside the data directory are not supported", name)
		}
	case 'd':
		if b.archives != 1 {
			return errors.New("archive data before its archive")
		}
		if _, err := b.w.Write(d[1:]); err != nil {
			return err
		}
	case 'p':
		if len(d) != 9 {
			return errors.New("a malformed progress message")
		}
		_ = binary.BigEndian.Uint64(d[1:])
	case 'm':
		return errors.New("the server sent a backup manifest it was not asked for")
	default:
		return fmt.Errorf("an unknown CopyData message %q", d[0])
	}
	return nil
}

// legacyData writes a piece of a legacy archive, keeping its tail.
func (b *baseBackup) legacyData(d []byte) error {
	if b.archives != 1 {
		return errors.New("archive data outside an archive")
	}
	if _, err := b.w.Write(d); err != nil {
		return err
	}
	if len(d) >= tarEnd {
		b.tail = append(b.tail[:0], d[len(d)-tarEnd:]...)
		return nil
	}
	b.tail = append(b.tail, d...)
	if over := len(b.tail) - tarEnd; over > 0 {
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return nil
}

// HostPort joins a member's address for messages.
func (s PostgresSource) HostPort() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }
