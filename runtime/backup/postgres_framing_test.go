package backup

import (
	"bytes"
	"strings"
	"testing"
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
				if err := b.copyData(p); err != nil {
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
	if err := b.copyData([]byte("x")); err == nil {
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
