package backup

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

func TestPostgresMajor(t *testing.T) {
	for _, c := range []struct {
		version string
		major   int
		err     string
	}{
		{"15.20", 15, ""},
		{"13.23 (Debian 13.23-0+deb11u4)", 13, ""},
		{"18beta1", 18, ""},
		{"12.22", 0, "no PostgreSQL major cairn can back up (13 and later)"},
		{"9.6.24", 0, "no PostgreSQL major"},
		{"", 0, "no PostgreSQL major"},
		{"devel", 0, "no PostgreSQL major"},
	} {
		major, err := PostgresMajor(c.version)
		if c.err == "" && (err != nil || major != c.major) || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("PostgresMajor(%q) = %d, %v; want %d, %q", c.version, major, err, c.major, c.err)
		}
	}
}

// A legacy archive gets the tar's end only when the server left it out,
// however the data was cut into messages.
func TestLegacyArchiveEndsAsATar(t *testing.T) {
	header := bytes.Repeat([]byte{'h'}, 512)
	end := make([]byte, tarEnd)
	for _, c := range []struct {
		name   string
		pieces [][]byte
		added  bool
	}{
		{"no end", [][]byte{header, header}, true},
		{"the end sent whole", [][]byte{header, end}, false},
		{"the end sent in small pieces", [][]byte{header, end[:100], end[100:700], end[700:]}, false},
		{"zeros, but fewer than the end", [][]byte{header, end[:512]}, true},
		{"the end, then data", [][]byte{end, header}, true},
		{"one byte pieces", split(append(append([]byte{}, header...), end...), 1), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			b := &baseBackup{w: &out, legacy: true, results: 2}
			if err := b.copyOut(); err != nil {
				t.Fatal(err)
			}
			sent := 0
			for _, p := range c.pieces {
				if err := b.legacyData(p); err != nil {
					t.Fatal(err)
				}
				sent += len(p)
			}
			if err := b.copyDone(); err != nil {
				t.Fatal(err)
			}
			if added := out.Len() - sent; added != 0 && (!c.added || added != tarEnd) || added == 0 && c.added {
				t.Fatalf("%d bytes added after %d sent; want the end added: %v", added, sent, c.added)
			}
		})
	}
}

func TestLegacyFramingErrors(t *testing.T) {
	b := &baseBackup{w: &bytes.Buffer{}, legacy: true, results: 1}
	if err := b.copyOut(); err == nil || !strings.Contains(err.Error(), "before the tablespace list") {
		t.Errorf("an archive before the tablespace list: %v", err)
	}
	b = &baseBackup{w: &bytes.Buffer{}, legacy: true, results: 2}
	if err := b.legacyData([]byte("x")); err == nil {
		t.Error("data outside an archive was taken")
	}
	_ = b.copyOut()
	if err := b.copyOut(); err == nil || !strings.Contains(err.Error(), "tablespaces outside the data directory are not supported") {
		t.Errorf("a second archive: %v", err)
	}
}

func split(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > n {
		out = append(out, b[:n])
		b = b[n:]
	}
	return append(out, b)
}

// wire is a server's side of a BASE_BACKUP exchange, message by message.
type wire []pgproto3.BackendMessage

func (w wire) bytes(t *testing.T) []byte {
	t.Helper()
	var out []byte
	for _, m := range w {
		var err error
		if out, err = m.Encode(out); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// result is one result set of a single row.
func result(values ...string) wire {
	row := &pgproto3.DataRow{}
	for _, v := range values {
		row.Values = append(row.Values, []byte(v))
	}
	return wire{&pgproto3.RowDescription{}, row, &pgproto3.CommandComplete{CommandTag: []byte("SELECT")}}
}

// archive is data cut into CopyData messages of the sizes PostgreSQL
// sends and odd ones, each prefixed by kind when kind is not 0.
func archive(data []byte, kind byte) wire {
	var w wire
	for i, size := 0, 0; len(data) > 0; i++ {
		size = min(len(data), []int{32 << 10, 1, 0, 5000, 70000}[i%5])
		d := data[:size]
		if kind != 0 {
			d = append([]byte{kind}, d...)
		}
		w, data = append(w, &pgproto3.CopyData{Data: d}), data[size:]
	}
	return w
}

func concat(ws ...wire) wire {
	var out wire
	for _, w := range ws {
		out = append(out, w...)
	}
	return out
}

// pieces reads at most n bytes at a time, as a socket may give them.
type pieces struct {
	data []byte
	n    int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.data)
	p.data = p.data[k:]
	return k, nil
}

// The whole exchange of each major's framing, read off the wire however
// the reads cut it: the archive comes out whole (a legacy one ended as a
// tar), with the start and end positions; what is not a backup is an
// error.
func TestBaseBackupExchange(t *testing.T) {
	tarData := payload(300<<10 + 512)
	tarEnded := append(append([]byte{}, tarData...), make([]byte, tarEnd)...)
	start, end, ready := result("0/2000028", "1"), result("0/2000100", "1"), wire{&pgproto3.ReadyForQuery{TxStatus: 'I'}}
	tablespaces := wire{&pgproto3.RowDescription{}, &pgproto3.CommandComplete{CommandTag: []byte("SELECT")}}
	newArchive := wire{&pgproto3.CopyOutResponse{}, &pgproto3.CopyData{Data: []byte("nbase.tar\x00\x00")}}
	progress := wire{&pgproto3.CopyData{Data: []byte{'p', 0, 0, 0, 0, 0, 0, 1, 0}}}
	notice := wire{&pgproto3.NoticeResponse{Severity: "NOTICE", Message: "all required WAL segments have been archived"}}
	for _, c := range []struct {
		name   string
		legacy bool
		w      wire
		out    []byte
		err    string
	}{
		{"15", false, concat(start, tablespaces, newArchive, archive(tarData, 'd'), progress, wire{&pgproto3.CopyDone{}}, notice, end, ready), tarData, ""},
		{"13: the end added", true, concat(start, tablespaces, wire{&pgproto3.CopyOutResponse{}}, archive(tarData, 0), wire{&pgproto3.CopyDone{}}, end, ready), tarEnded, ""},
		{"13: the end sent", true, concat(start, tablespaces, wire{&pgproto3.CopyOutResponse{}}, archive(tarEnded, 0), wire{&pgproto3.CopyDone{}}, end, ready), tarEnded, ""},
		{"an error", false, concat(start, wire{&pgproto3.ErrorResponse{Severity: "ERROR", Code: "42601", Message: "syntax error"}}, ready), nil, "syntax error (SQLSTATE 42601)"},
		{"a second archive", false, concat(start, tablespaces, newArchive, archive(tarData[:10], 'd'), wire{&pgproto3.CopyData{Data: []byte("nspc.tar\x00/x\x00")}}), tarData[:10], `a second archive "spc.tar"`},
		{"a manifest", false, concat(start, tablespaces, newArchive, wire{&pgproto3.CopyData{Data: []byte("m{}")}}), nil, "backup manifest it was not asked for"},
		{"data before its archive", false, concat(start, tablespaces, archive(tarData[:10], 'd')), nil, "archive data before its archive"},
		{"ended early", false, concat(start, tablespaces, newArchive, wire{&pgproto3.CopyDone{}}, ready), nil, "ended the backup early"},
		{"cut off", false, concat(start, tablespaces, newArchive, archive(tarData, 'd'))[:20], nil, "unexpected EOF"},
		{"an unexpected message", false, concat(start, wire{&pgproto3.CopyInResponse{}}), nil, `an unexpected message 'G'`},
	} {
		for _, buffer := range []int{256, wireBuffer} {
			for _, n := range []int{1, 7, 300, 1 << 20} {
				t.Run(fmt.Sprintf("%s/buffer %d/reads of %d", c.name, buffer, n), func(t *testing.T) {
					stream := c.w.bytes(t)
					if c.name == "cut off" {
						stream = stream[:len(stream)-1]
					}
					var out bytes.Buffer
					b := &baseBackup{w: &out, legacy: c.legacy}
					err := b.read(&wireReader{r: &pieces{data: stream, n: n}, buf: make([]byte, buffer)})
					if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
						t.Fatalf("got %v, want %q", err, c.err)
					}
					if c.err == "" && (b.start != "0/2000028" || b.end != "0/2000100" || b.timeline != 1) {
						t.Fatalf("start %s, end %s, timeline %d", b.start, b.end, b.timeline)
					}
					if c.out != nil && !bytes.Equal(out.Bytes(), c.out) {
						t.Fatalf("archive of %d bytes, want %d", out.Len(), len(c.out))
					}
				})
			}
		}
	}
}
