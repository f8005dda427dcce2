package backup

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
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
}

// Stream implements Source.
func (s PostgresSource) Stream(ctx context.Context, w io.Writer, m *Manifest) error {
	cfg, err := pgconn.ParseConfig("sslmode=prefer replication=true dbname=replication")
	if err != nil {
		return err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password = s.Host, uint16(s.Port), s.User, s.Password
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s for a base backup: %w", s.Member, err)
	}
	defer conn.Close(context.Background())
	m.Source, m.Version = s.Member, conn.ParameterStatus("server_version")
	bb := &baseBackup{conn: conn, w: w}
	if err := bb.run(ctx); err != nil {
		return fmt.Errorf("base backup of %s: %w", s.Member, err)
	}
	m.Postgres = &PostgresDetail{StartLSN: bb.start, EndLSN: bb.end, Timeline: bb.timeline}
	return nil
}

// baseBackup reads one BASE_BACKUP exchange (PostgreSQL 15 and later):
// the start position, the tablespaces, one CopyOut of 'n'/'d'/'p'
// messages carrying the archives, and the end position.
type baseBackup struct {
	conn       *pgconn.PgConn
	w          io.Writer
	start, end string
	timeline   int64
	results    int
	archives   int
}

const baseBackupCommand = "BASE_BACKUP (LABEL 'cairn', CHECKPOINT 'fast', WAL true, WAIT true, MANIFEST 'no')"

func (b *baseBackup) run(ctx context.Context) error {
	b.conn.Frontend().Send(&pgproto3.Query{String: baseBackupCommand})
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
		case *pgproto3.CopyData:
			if err := b.copyData(msg.Data); err != nil {
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

func (b *baseBackup) copyData(d []byte) error {
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

// HostPort joins a member's address for messages.
func (s PostgresSource) HostPort() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }
