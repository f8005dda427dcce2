package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/minio/crc64nvme"
)

// putBackup stores data and a manifest as a cairn of manifest format
// would have, the checksum filled in by sum.
func putBackup(t *testing.T, st Store, id, format string, data []byte, sum func(*Manifest)) Manifest {
	t.Helper()
	ctx := context.Background()
	m := Manifest{Format: format, ID: id, Cluster: "db", Kind: "PostgresCluster", Size: int64(len(data)),
		Started: time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC), Finished: time.Date(2026, 11, 30, 2, 5, 0, 0, time.UTC)}
	sum(&m)
	if _, err := st.Put(ctx, Key("db", id)+"/"+dataObject, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, Key("db", id)+"/"+manifestObject, bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	return m
}

// Backups of either manifest format are read back and verified with the
// checksum their manifest names; data that does not match it, or a
// manifest without the checksum its format has, fails the read.
func TestOpenDataVerifiesEachFormat(t *testing.T) {
	data := payload(3<<20 + 17)
	other := payload(3<<20 + 17)
	other[1<<20] ^= 1
	sha := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	crc := func(b []byte) string { h := crc64nvme.New(); h.Write(b); return hex.EncodeToString(h.Sum(nil)) }
	for _, c := range []struct {
		name, format string
		sum          func(*Manifest)
		want         string // "" reads data back
	}{
		{"v1: SHA-256, as cairn wrote before v2", manifestFormatV1, func(m *Manifest) { m.SHA256 = sha(data) }, ""},
		{"v2: CRC-64/NVME", ManifestFormat, func(m *Manifest) { m.CRC64NVME = crc(data) }, ""},
		{"v1, data changed", manifestFormatV1, func(m *Manifest) { m.SHA256 = sha(other) }, errIncomplete.Error()},
		{"v2, data changed", ManifestFormat, func(m *Manifest) { m.CRC64NVME = crc(other) }, errIncomplete.Error()},
		{"v2, size changed", ManifestFormat, func(m *Manifest) { m.CRC64NVME, m.Size = crc(data), m.Size-1 }, errIncomplete.Error()},
		{"v1 without its SHA-256", manifestFormatV1, func(m *Manifest) { m.CRC64NVME = crc(data) }, "has no checksum of its data"},
		{"v2 without its CRC", ManifestFormat, func(m *Manifest) { m.SHA256 = sha(data) }, "has no checksum of its data"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			st := &FileStore{Root: t.TempDir()}
			putBackup(t, st, "20261130T020000Z-aaaaaa", c.format, data, c.sum)
			m, err := Find(ctx, st, "db", "latest")
			if err != nil {
				t.Fatal(err)
			}
			r, err := OpenData(ctx, st, m)
			var back []byte
			if err == nil {
				back, err = io.ReadAll(r)
				r.Close()
			}
			switch {
			case c.want == "" && (err != nil || !bytes.Equal(back, data)):
				t.Fatalf("read back %d bytes: %v", len(back), err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// A manifest of a format this cairn does not know is refused by name,
// not misread; one of each known format lists.
func TestListReadsBothFormats(t *testing.T) {
	ctx := context.Background()
	st := &FileStore{Root: t.TempDir()}
	putBackup(t, st, "20261130T020000Z-aaaaaa", manifestFormatV1, payload(10), func(m *Manifest) { m.SHA256 = strings.Repeat("0", 64) })
	putBackup(t, st, "20261130T030000Z-bbbbbb", ManifestFormat, payload(10), func(m *Manifest) { m.CRC64NVME = strings.Repeat("0", 16) })
	if all, err := List(ctx, st, "db"); err != nil || len(all) != 2 {
		t.Fatalf("listed %v, %v", all, err)
	}
	putBackup(t, st, "20261130T040000Z-cccccc", "cairn.dev/backup/v3", payload(10), func(*Manifest) {})
	if _, err := List(ctx, st, "db"); err == nil || !strings.Contains(err.Error(), `in format "cairn.dev/backup/v3"`) {
		t.Fatalf("a manifest of an unknown format: %v", err)
	}
}

// Take writes format v2 manifests, whose CRC is the data's.
func TestTakeWritesCRC64NVME(t *testing.T) {
	ctx := context.Background()
	st := &FileStore{Root: t.TempDir()}
	data := payload(5<<20 + 3)
	m, err := Take(ctx, st, "db", "PostgresCluster", bytesSource{data: data}, clock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	h := crc64nvme.New()
	h.Write(data)
	if m.Format != ManifestFormat || m.SHA256 != "" || m.CRC64NVME != hex.EncodeToString(h.Sum(nil)) {
		t.Fatalf("manifest %+v", m)
	}
	// The check value of CRC-64/NVME ("123456789"), so the hex is the
	// standard algorithm's, big-endian, as S3's x-amz-checksum-crc64nvme.
	h = crc64nvme.New()
	h.Write([]byte("123456789"))
	if got := hex.EncodeToString(h.Sum(nil)); got != "ae8b14860a799888" {
		t.Fatalf("CRC-64/NVME check value %s", got)
	}
	if _, err := OpenData(ctx, st, Manifest{Format: ManifestFormat, ID: m.ID, Cluster: "db"}); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("a manifest without a checksum opened: %v", err)
	}
}

// endless is a store whose data objects never end (a store that lies, or
// an attacker's): reads of them return bytes forever.
type endless struct {
	Store
	read int64
}

func (e *endless) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if !strings.HasSuffix(key, "/"+dataObject) {
		return e.Store.Get(ctx, key)
	}
	return io.NopCloser(readerFunc(func(p []byte) (int, error) {
		e.read += int64(len(p))
		return len(p), nil
	})), nil
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// Data longer than its manifest says is refused one byte past the size:
// a restore never reads a store's data to an end that may not come.
func TestOpenDataReadsNoFurtherThanTheManifest(t *testing.T) {
	ctx := context.Background()
	data := payload(1 << 20)
	st := &endless{Store: &FileStore{Root: t.TempDir()}}
	putBackup(t, st.Store, "20261130T020000Z-aaaaaa", ManifestFormat, data, func(m *Manifest) {
		h := crc64nvme.New()
		h.Write(data)
		m.CRC64NVME = hex.EncodeToString(h.Sum(nil))
	})
	m, err := Find(ctx, st, "db", "latest")
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenData(ctx, st, m)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = io.Copy(io.Discard, r)
	if !errors.Is(err, errIncomplete) || !strings.Contains(err.Error(), "more than the manifest's 1048576 bytes") {
		t.Fatalf("read of endless data: %v", err)
	}
	if st.read > m.Size+1 {
		t.Errorf("read %d bytes of data whose manifest says %d", st.read, m.Size)
	}
}
