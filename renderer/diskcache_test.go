package renderer

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// diskFiles are the entry files under a DiskCache's folder.
func diskFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func openDisk(t *testing.T, dir string, r *Renderer, identity string) *DiskCache {
	t.Helper()
	d, err := OpenDiskCache(dir, 0, r, []byte(identity))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// renderAll renders every plan's first step through c, checking each
// against the renderer without a cache.
func renderAll(t *testing.T, c *Cache, r *Renderer, desired []spec.Cluster, plans plan.List) {
	t.Helper()
	for i, cl := range desired {
		p := plans.Plans[i]
		want, wantBuilt, err := r.Render(cl, p, p.Steps[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		got, built, err := c.Render(cl, p, p.Steps[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !sameTree(got, want) || !bytes.Equal(built.Base, wantBuilt.Base) || !bytes.Equal(built.Selected, wantBuilt.Selected) ||
			(built.Base == nil) != (wantBuilt.Base == nil) {
			t.Errorf("%s: the cache's answer differs from the renderer's", p.Cluster)
		}
	}
}

// A new process (a new Cache over the same folder) renders nothing that
// an earlier one rendered, and answers byte for byte what Render does.
func TestDiskCacheServesTheNextProcess(t *testing.T) {
	desired, plans, r := cacheFixture(t, 6)
	dir := t.TempDir()
	first := NewCache(r, 0).WithDisk(openDisk(t, dir, r, "build-1"))
	renderAll(t, first, r, desired, plans)
	if st := first.Stats(); st.Misses != len(desired) || st.DiskHits != 0 || st.DiskErrors != 0 {
		t.Fatalf("first process: %+v, want %d misses", st, len(desired))
	}
	if n := len(diskFiles(t, dir)); n != len(desired) {
		t.Fatalf("%d entries on disk, want %d", n, len(desired))
	}
	next := NewCache(r, 0).WithDisk(openDisk(t, dir, r, "build-1"))
	renderAll(t, next, r, desired, plans)
	if st := next.Stats(); st.Misses != 0 || st.DiskHits != len(desired) {
		t.Fatalf("next process: %+v, want every render from the disk", st)
	}
	// Within the process, memory answers first.
	renderAll(t, next, r, desired, plans)
	if st := next.Stats(); st.Hits != len(desired) || st.Misses != 0 {
		t.Fatalf("second pass of the next process: %+v", st)
	}
}

// Another build of cairn, or a renderer with other options, never reads
// an entry it did not write.
func TestDiskCacheKeysByProgramAndOptions(t *testing.T) {
	desired, plans, r := cacheFixture(t, 3)
	dir := t.TempDir()
	renderAll(t, NewCache(r, 0).WithDisk(openDisk(t, dir, r, "build-1")), r, desired, plans)
	other, err := New(Options{CairnImage: "registry.example/cairn:other"}, Etcd(), Postgres())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		r        *Renderer
		identity string
	}{
		{"another build", r, "build-2"},
		{"other images", other, "build-1"},
	} {
		c := NewCache(tc.r, 0).WithDisk(openDisk(t, dir, tc.r, tc.identity))
		for i, cl := range desired {
			if _, _, err := c.Render(cl, plans.Plans[i], plans.Plans[i].Steps[0].ID); err != nil {
				t.Fatal(err)
			}
		}
		if st := c.Stats(); st.DiskHits != 0 || st.Misses != len(desired) {
			t.Errorf("%s: %+v, want every cluster rendered", tc.name, st)
		}
	}
	if _, err := OpenDiskCache(dir, 0, r, nil); err == nil {
		t.Error("a cache without the program's identity was opened")
	}
}

// An entry that does not pass its check, however it is damaged, is a
// miss: rendered again and written anew, never handed out.
func TestDiskCacheDropsDamagedEntries(t *testing.T) {
	desired, plans, r := cacheFixture(t, 1)
	damages := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"a byte flipped in a file", func(b []byte) []byte { b[len(b)/2] ^= 0x20; return b }},
		{"the sum flipped", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"cut short", func(b []byte) []byte { return b[:len(b)-40] }},
		{"empty", func([]byte) []byte { return nil }},
		{"another format", func(b []byte) []byte { return append([]byte("cairn render cache 0\n"), b[len(diskMagic):]...) }},
		{"garbage", func([]byte) []byte { return bytes.Repeat([]byte{0xff}, 4096) }},
	}
	for _, dmg := range damages {
		t.Run(dmg.name, func(t *testing.T) {
			dir := t.TempDir()
			renderAll(t, NewCache(r, 0).WithDisk(openDisk(t, dir, r, "b")), r, desired[:1], plans)
			files := diskFiles(t, dir)
			if len(files) != 1 {
				t.Fatalf("%d entries, want 1", len(files))
			}
			data, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(files[0], dmg.edit(bytes.Clone(data)), 0o600); err != nil {
				t.Fatal(err)
			}
			c := NewCache(r, 0).WithDisk(openDisk(t, dir, r, "b"))
			renderAll(t, c, r, desired[:1], plans)
			if st := c.Stats(); st.DiskHits != 0 || st.Misses != 1 {
				t.Errorf("%+v, want the damaged entry rendered again", st)
			}
			again, err := os.ReadFile(files[0])
			if err != nil || !bytes.Equal(again, data) {
				t.Errorf("the entry was not written anew (err %v)", err)
			}
		})
	}
}

// Entries round-trip whatever they hold: nil and empty builds stay apart,
// empty files stay empty.
func TestDiskEntryRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	blob := func() []byte {
		if rng.IntN(5) == 0 {
			return nil
		}
		b := make([]byte, rng.IntN(300))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	for range 200 {
		tree := Tree{}
		for range rng.IntN(6) {
			tree[string(blob())+"/f"] = append([]byte{}, blob()...)
		}
		b := Built{Base: blob(), Selected: blob()}
		gotTree, gotBuilt, err := decodeEntry(encodeEntry(tree, b))
		if err != nil {
			t.Fatal(err)
		}
		if !sameTree(gotTree, tree) || !bytes.Equal(gotBuilt.Base, b.Base) || (gotBuilt.Base == nil) != (b.Base == nil) ||
			!bytes.Equal(gotBuilt.Selected, b.Selected) || (gotBuilt.Selected == nil) != (b.Selected == nil) {
			t.Fatalf("round trip of %d files differs", len(tree))
		}
	}
}

// Trim keeps the folder under its limit, removing the entries used
// longest ago first, and the temporary files a process left behind.
func TestDiskCacheTrimRemovesLeastRecentlyUsed(t *testing.T) {
	desired, plans, r := cacheFixture(t, 4)
	dir := t.TempDir()
	d := openDisk(t, dir, r, "b")
	renderAll(t, NewCache(r, 0).WithDisk(d), r, desired, plans)
	files := diskFiles(t, dir)
	var total int64
	old := time.Now().Add(-48 * time.Hour)
	for i, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		total += info.Size()
		// The first file was used last.
		when := old.Add(-time.Duration(i) * time.Hour)
		if i == 0 {
			when = time.Now()
		}
		if err := os.Chtimes(f, when, when); err != nil {
			t.Fatal(err)
		}
	}
	leftover := filepath.Join(dir, ".tmp-left-behind")
	if err := os.WriteFile(leftover, []byte("half an entry"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(leftover, old, old); err != nil {
		t.Fatal(err)
	}
	d.limit = total / 2
	removed, err := d.Trim()
	if err != nil {
		t.Fatal(err)
	}
	left := diskFiles(t, dir)
	var size int64
	for _, f := range left {
		info, _ := os.Stat(f)
		size += info.Size()
	}
	if size > d.limit || removed == 0 || !slices.Contains(left, files[0]) {
		t.Errorf("after Trim: %d bytes in %d entries (limit %d, %d removed); the entry used last must stay", size, len(left), d.limit, removed)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("a temporary file left an hour ago or more stays: %v", err)
	}
}

// A folder another may write, or a symlink, or a file, is refused: what
// is in it becomes pull requests.
func TestOpenDiskCacheRefusesAFolderOthersControl(t *testing.T) {
	_, _, r := cacheFixture(t, 1)
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	mine := filepath.Join(base, "mine")
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{shared, "may be written by its group or others"},
		{link, "not a folder"},
		{file, "not a directory"},
	} {
		if _, err := OpenDiskCache(tc.dir, 0, r, []byte("b")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.dir, err, tc.want)
		}
	}
	d, err := OpenDiskCache(filepath.Join(base, "new", "cache"), 0, r, []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(d.dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("a new cache folder: %v, %v; want mode 0700", info.Mode(), err)
	}
}
