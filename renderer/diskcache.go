package renderer

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// DiskCache keeps what a Cache rendered in files under a folder, so that
// a new process (cairn propose, run by CI on every push) renders only the
// clusters whose spec or plan changed since the last run: the others are
// read back. It is the Cache's second level: an entry is found by the
// same key (the spec, the plan and the step), salted with the renderer's
// options and the identity of the program that rendered it, so that
// another build of cairn, or other images, never reads an entry it did
// not write.
//
// What is read back is checked, as the in-memory cache checks its
// entries: every entry ends with the SHA-256 of what it holds, and one
// that does not match, is cut short or does not parse is a miss (and is
// removed). Read back, an entry is what Render returned, so provenance is
// unchanged: the step branch's commit is still made of the tree and
// compared with the branch's objects. The folder is trusted as the
// program is: OpenDiskCache refuses one another user owns or may write.
//
// The folder is bounded: Trim removes the entries used longest ago until
// it holds less than its limit. Entries are written to a temporary file
// and renamed, so two processes sharing the folder never read half an
// entry.
type DiskCache struct {
	dir   string
	limit int64
	// salt is mixed into every key: the renderer's options, the kinds it
	// renders and the program's identity.
	salt [sha256.Size]byte
}

// DefaultDiskCacheLimit bounds a DiskCache's folder when OpenDiskCache is
// given no limit: about 20 times what a fleet of 1,000 clusters writes.
const DefaultDiskCacheLimit = 1 << 30

// maxDiskEntry bounds what one entry may hold: a file larger than this is
// not read.
const maxDiskEntry = 256 << 20

// diskMagic starts every entry; its version changes with the format.
const diskMagic = "cairn render cache 1\n"

// OpenDiskCache opens (creating it, mode 0700) the cache folder dir for
// entries rendered by r, by the program identity names (such as its
// build ID: an empty identity is refused, as it cannot tell two builds
// apart). A folder that is a symlink, or that another user owns or may
// write, is refused: its entries become pull requests.
func OpenDiskCache(dir string, limit int64, r *Renderer, identity []byte) (*DiskCache, error) {
	if len(identity) == 0 {
		return nil, errors.New("render cache: no identity of the program to key entries by")
	}
	if dir == "" {
		return nil, errors.New("render cache: no folder")
	}
	if limit <= 0 {
		limit = DefaultDiskCacheLimit
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("render cache: %w", err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("render cache: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("render cache: %s is not a folder (a symlink is not followed)", dir)
	}
	if err := ownedByUs(dir, info); err != nil {
		return nil, fmt.Errorf("render cache: %w", err)
	}
	opts, err := json.Marshal(r.opts)
	if err != nil {
		return nil, fmt.Errorf("render cache: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s%d\x00", diskMagic, len(identity))
	h.Write(identity)
	fmt.Fprintf(h, "\x00%d\x00", len(opts))
	h.Write(opts)
	for _, k := range slices.Sorted(maps.Keys(r.kinds)) {
		fmt.Fprintf(h, "\x00%s", k)
	}
	d := &DiskCache{dir: dir, limit: limit}
	h.Sum(d.salt[:0])
	return d, nil
}

// path is the file of the entry for key (a Cache's key).
func (d *DiskCache) path(key [sha256.Size]byte) string {
	h := sha256.New()
	h.Write(d.salt[:])
	h.Write(key[:])
	name := hex.EncodeToString(h.Sum(nil))
	return filepath.Join(d.dir, name[:2], name)
}

// get reads the entry for key; ok is false when there is none, or none
// that passes its check (that one is removed).
func (d *DiskCache) get(key [sha256.Size]byte) (t Tree, b Built, ok bool) {
	p := d.path(key)
	f, err := os.Open(p)
	if err != nil {
		return nil, Built{}, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxDiskEntry+1))
	f.Close()
	if err == nil && len(data) <= maxDiskEntry {
		if t, b, err = decodeEntry(data); err == nil {
			now := time.Now()
			_ = os.Chtimes(p, now, now) // used now: Trim keeps it longest
			return t, b, true
		}
	}
	_ = os.Remove(p)
	return nil, Built{}, false
}

// put writes the entry for key, replacing any.
func (d *DiskCache) put(key [sha256.Size]byte, t Tree, b Built) error {
	p := d.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(encodeEntry(t, b))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Trim removes the entries used longest ago until the folder holds at
// most three quarters of its limit, once it holds more than the limit;
// it returns how many it removed. Temporary files another process left
// behind an hour ago or more go too.
func (d *DiskCache) Trim() (int, error) {
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var entries []entry
	var total int64
	stale := time.Now().Add(-time.Hour)
	removed := 0
	err := filepath.WalkDir(d.dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !de.Type().IsRegular() {
			return nil
		}
		info, err := de.Info()
		if err != nil {
			return nil // removed by another process meanwhile
		}
		if filepath.Base(p)[0] == '.' {
			if info.ModTime().Before(stale) && os.Remove(p) == nil {
				removed++
			}
			return nil
		}
		entries = append(entries, entry{p, info.Size(), info.ModTime()})
		total += info.Size()
		return nil
	})
	if err != nil || total <= d.limit {
		return removed, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.Before(entries[j].used) })
	for _, e := range entries {
		if total <= d.limit/4*3 {
			break
		}
		if err := os.Remove(e.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		total -= e.size
		removed++
	}
	return removed, nil
}

// encodeEntry is an entry's bytes: diskMagic, the tree's files sorted by
// path, each path and content prefixed by its length, the two builds
// (length+1, 0 for nil), and the SHA-256 of all that.
func encodeEntry(t Tree, b Built) []byte {
	var buf bytes.Buffer
	buf.WriteString(diskMagic)
	put := func(p []byte) {
		buf.Write(binary.AppendUvarint(nil, uint64(len(p))))
		buf.Write(p)
	}
	putBuilt := func(p []byte) {
		if p == nil {
			buf.WriteByte(0)
			return
		}
		buf.Write(binary.AppendUvarint(nil, uint64(len(p))+1))
		buf.Write(p)
	}
	buf.Write(binary.AppendUvarint(nil, uint64(len(t))))
	for _, p := range slices.Sorted(maps.Keys(t)) {
		put([]byte(p))
		put(t[p])
	}
	putBuilt(b.Base)
	putBuilt(b.Selected)
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	return buf.Bytes()
}

// errBadEntry: an entry that does not pass its check.
var errBadEntry = errors.New("render cache: a bad entry")

// decodeEntry reads what encodeEntry wrote, checking its sum first.
func decodeEntry(data []byte) (Tree, Built, error) {
	if len(data) < len(diskMagic)+sha256.Size || string(data[:len(diskMagic)]) != diskMagic {
		return nil, Built{}, errBadEntry
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, Built{}, errBadEntry
	}
	rest := body[len(diskMagic):]
	next := func(nilable bool) ([]byte, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 {
			return nil, false
		}
		rest = rest[k:]
		if nilable {
			if n == 0 {
				return nil, true
			}
			n--
		}
		if n > uint64(len(rest)) {
			return nil, false
		}
		p := rest[:n:n]
		rest = rest[n:]
		return p, true
	}
	count, k := binary.Uvarint(rest)
	if k <= 0 || count > uint64(len(rest)) {
		return nil, Built{}, errBadEntry
	}
	rest = rest[k:]
	t := make(Tree, count)
	for range count {
		p, ok := next(false)
		if !ok {
			return nil, Built{}, errBadEntry
		}
		content, ok := next(false)
		if !ok {
			return nil, Built{}, errBadEntry
		}
		t[string(p)] = content
	}
	var b Built
	var ok bool
	if b.Base, ok = next(true); !ok {
		return nil, Built{}, errBadEntry
	}
	if b.Selected, ok = next(true); !ok || len(rest) != 0 {
		return nil, Built{}, errBadEntry
	}
	return t, b, nil
}
