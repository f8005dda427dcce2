package backup

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// walFolder is the top folder of every cluster's archived WAL. No cluster
// name starts with "_" (names are DNS labels), so WAL never shares a
// folder with a cluster's backups: listing a cluster's backups never
// reads its WAL, and retention of backups never takes WAL for a leftover.
const walFolder = "_wal"

// walSuffix ends every archived WAL object: each is gzip-compressed, its
// header naming the file and the time it was archived.
const walSuffix = ".gz"

// WALPrefix is the folder of the WAL one PostgreSQL system (its
// system identifier, which pg_upgrade changes) of cluster archived:
// _wal/<cluster>/<system>/. A major upgrade starts a new folder, so the
// chains of the two systems never mix.
func WALPrefix(cluster string, system uint64) string {
	return walFolder + "/" + cluster + "/" + strconv.FormatUint(system, 10) + "/"
}

// WALArchive is the archived WAL of one system of one cluster.
type WALArchive struct {
	Store   Store
	Cluster string
	System  uint64
	// Now stamps each archived file; time.Now when nil.
	Now func() time.Time
}

func (a WALArchive) key(name string) string { return WALPrefix(a.Cluster, a.System) + name + walSuffix }

func (a WALArchive) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// ErrWALConflict is a WAL file archived before with other contents.
var ErrWALConflict = errors.New("archived before with other contents")

// Push archives the WAL file at path under name. A file archived before
// with the same contents is done (PostgreSQL archives a file again after
// a crash between the upload and its own note of it); with other contents
// it is ErrWALConflict, and nothing is overwritten. Push never deletes.
func (a WALArchive) Push(ctx context.Context, name, path string) error {
	if err := CheckWALName(name); err != nil {
		return err
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	switch old, err := a.sum(ctx, name); {
	case err == nil && bytes.Equal(old, sum):
		return nil
	case err == nil:
		return fmt.Errorf("archive %s to %s: %w; a second system writes to this cluster's archive, or the archive was written by hand", name, a.Cluster, ErrWALConflict)
	case !errors.Is(err, ErrNotFound):
		return fmt.Errorf("archive %s: %w", name, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	defer f.Close()
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		// The header's time has whole seconds; its comment the exact one.
		now := a.now()
		zw.Name, zw.ModTime, zw.Comment = name, now, now.UTC().Format(time.RFC3339Nano)
		_, err := io.CopyBuffer(zw, f, make([]byte, 1<<20))
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		pw.CloseWithError(err)
	}()
	_, err = a.Store.Put(ctx, a.key(name), pr)
	pr.CloseWithError(err)
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	return nil
}

// open returns the decompressing reader of an archived file, checked to
// be the file it is stored as, and the time it was archived.
func (a WALArchive) open(ctx context.Context, name string) (*gzip.Reader, io.Closer, error) {
	r, err := a.Store.Get(ctx, a.key(name))
	if err != nil {
		return nil, nil, err
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("archived %s of %s is damaged: %w", name, a.Cluster, err)
	}
	if zr.Name != name {
		r.Close()
		return nil, nil, fmt.Errorf("archived %s of %s holds %q", name, a.Cluster, zr.Name)
	}
	return zr, r, nil
}

// bounded reads an opened file's bytes, up to the most a file of its
// name may hold (maxWALFileSize).
func (a WALArchive) bounded(zr *gzip.Reader, name string) io.Reader {
	limit := maxWALFileSize(name)
	return &boundedReader{r: zr, left: limit, tooLong: fmt.Errorf("archived %s of %s decompresses to more than %d bytes, more than any such file PostgreSQL writes", name, a.Cluster, limit)}
}

// boundedReader fails once more than left bytes are read: an archived
// WAL file that decompresses past the largest file of its kind is
// damaged or not PostgreSQL's.
type boundedReader struct {
	r       io.Reader
	left    int64
	tooLong error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	if int64(n) > b.left {
		return 0, b.tooLong
	}
	b.left -= int64(n)
	return n, err
}

func (a WALArchive) sum(ctx context.Context, name string) ([]byte, error) {
	zr, c, err := a.open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	h := sha256.New()
	if _, err := io.Copy(h, a.bounded(zr, name)); err != nil {
		return nil, fmt.Errorf("archived %s of %s is damaged: %w", name, a.Cluster, err)
	}
	return h.Sum(nil), nil
}

// Archived is when name was archived.
func (a WALArchive) Archived(ctx context.Context, name string) (time.Time, error) {
	zr, c, err := a.open(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	c.Close()
	if t, err := time.Parse(time.RFC3339Nano, zr.Comment); err == nil {
		return t, nil
	}
	return zr.ModTime, nil
}

// Fetch writes the archived file name to dest, all or nothing (a
// temporary file beside it, synced and renamed). It returns ErrNotFound
// when name is not archived, and an error when the archived copy is
// damaged: gzip's checksum covers every byte.
func (a WALArchive) Fetch(ctx context.Context, name, dest string) error {
	if err := CheckWALName(name); err != nil {
		return err
	}
	zr, c, err := a.open(ctx, name)
	if err != nil {
		return err
	}
	defer c.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".cairn-fetch-*")
	if err != nil {
		return fmt.Errorf("fetch %s: %w", name, err)
	}
	_, err = io.CopyBuffer(tmp, contextReader{ctx, a.bounded(zr, name)}, make([]byte, 1<<20))
	if err != nil {
		err = fmt.Errorf("archived %s of %s is damaged: %w", name, a.Cluster, err)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func fileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// walFiles lists the names archived for a system, by kind.
type walFiles struct {
	segments  map[Segment]bool
	histories map[uint32]bool
	// other are the .partial and .backup files, by name.
	other []string
}

func (a WALArchive) list(ctx context.Context, size int64) (walFiles, error) {
	keys, err := a.Store.List(ctx, WALPrefix(a.Cluster, a.System))
	if err != nil {
		return walFiles{}, err
	}
	return a.files(keys, size)
}

// files sorts the keys of a's folder by kind, reading segment names in
// segments of size.
func (a WALArchive) files(keys []string, size int64) (walFiles, error) {
	w := walFiles{segments: map[Segment]bool{}, histories: map[uint32]bool{}}
	for _, k := range keys {
		name, ok := strings.CutSuffix(strings.TrimPrefix(k, WALPrefix(a.Cluster, a.System)), walSuffix)
		if !ok || CheckWALName(name) != nil {
			continue // a cut-off upload's leftover, or not cairn's
		}
		switch {
		case walSegmentName.MatchString(name):
			s, err := ParseSegment(name, size)
			if err != nil {
				return walFiles{}, fmt.Errorf("WAL archive of %s: %w (the backup records segments of %d bytes)", a.Cluster, err, size)
			}
			w.segments[s] = true
		case walHistoryName.MatchString(name):
			tli, _ := strconv.ParseUint(name[:8], 16, 32)
			w.histories[uint32(tli)] = true
		default:
			w.other = append(w.other, name)
		}
	}
	return w, nil
}

func (a WALArchive) history(ctx context.Context, tli uint32) ([]TimelineSwitch, error) {
	zr, c, err := a.open(ctx, HistoryName(tli))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	data, err := io.ReadAll(io.LimitReader(zr, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("archived %s of %s is damaged: %w", HistoryName(tli), a.Cluster, err)
	}
	return ParseHistory(HistoryName(tli), data)
}
