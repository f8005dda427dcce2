package backup

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// baseBackup reads one BASE_BACKUP exchange: the start position, the
// tablespaces, the archives, and the end position. The archives come as
// PostgreSQL 15 and later send them, one CopyOut of 'n'/'d'/'p' messages
// (legacy false), or as 13 and 14 do (legacy true): one CopyOut per
// tablespace whose data is the tar itself, without the two empty blocks
// that end a tar file. The archive's data goes to w as it comes off the
// connection, in the pieces the reads bring.
type baseBackup struct {
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

// run sends the command on conn, an idle replication connection, and
// reads the exchange to its ReadyForQuery. When ctx ends, the
// connection's reads and writes fail at once.
func (b *baseBackup) run(ctx context.Context, conn net.Conn) error {
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	q, err := (&pgproto3.Query{String: b.command()}).Encode(nil)
	if err == nil {
		_, err = conn.Write(q)
	}
	if err == nil {
		err = b.read(newWireReader(conn))
	}
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// read reads messages until the exchange ends.
func (b *baseBackup) read(r *wireReader) error {
	for {
		typ, n, err := r.header()
		if err != nil {
			return err
		}
		if typ == 'd' {
			if err := b.copyData(r, n); err != nil {
				return err
			}
			continue
		}
		body, err := r.body(n)
		if err != nil {
			return err
		}
		if done, err := b.message(typ, body); done || err != nil {
			return err
		}
	}
}

// message takes one message other than CopyData; done is the exchange's
// end.
func (b *baseBackup) message(typ byte, body []byte) (done bool, err error) {
	switch typ {
	case 'D':
		var row pgproto3.DataRow
		if err := row.Decode(body); err != nil {
			return true, err
		}
		return false, b.row(&row)
	case 'C':
		b.results++
	case 'H':
		return false, b.copyOut()
	case 'c':
		return false, b.copyDone()
	case 'E':
		var e pgproto3.ErrorResponse
		if err := e.Decode(body); err != nil {
			return true, err
		}
		return true, pgconn.ErrorResponseToPgError(&e)
	case 'Z':
		if b.end == "" || b.archives == 0 {
			return true, errors.New("the server ended the backup early")
		}
		return true, nil
	case 'T', 'N', 'S', 'A':
		// A result's columns; a notice, a setting's change, a
		// notification: nothing the backup needs.
	default:
		return true, fmt.Errorf("an unexpected message %q", typ)
	}
	return false, nil
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

// copyData takes a CopyData message of n bytes: in the legacy framing
// all archive data; from 15 on, a kind byte and archive data ('d',
// streamed) or a small message ('n', 'p', 'm').
func (b *baseBackup) copyData(r *wireReader, n int) error {
	if b.legacy {
		return r.stream(n, b.legacyData)
	}
	if n == 0 {
		return errors.New("an empty CopyData message")
	}
	k, err := r.body(1)
	if err != nil {
		return err
	}
	kind := k[0]
	if kind == 'd' {
		if b.archives != 1 {
			return errors.New("archive data before its archive")
		}
		return r.stream(n-1, b.data)
	}
	body, err := r.body(n - 1)
	if err != nil {
		return err
	}
	switch kind {
	case 'n':
		b.archives++
		if b.archives > 1 {
			name, _, _ := strings.Cut(string(body), "\x00")
			return fmt.Errorf("a second archive %q: tablespaces outside the data directory are not supported", name)
		}
	case 'p':
		if len(body) != 8 {
			return errors.New("a malformed progress message")
		}
		_ = binary.BigEndian.Uint64(body)
	case 'm':
		return errors.New("the server sent a backup manifest it was not asked for")
	default:
		return fmt.Errorf("an unknown CopyData message %q", kind)
	}
	return nil
}

// data writes a piece of an archive.
func (b *baseBackup) data(d []byte) error {
	_, err := b.w.Write(d)
	return err
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
