package live

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/testbed/alloc"
)

// TestHostileLiveFiles: each file of testdata/hostile, and each thing
// that is not a live-state file, is refused by ReadFile with a clear
// error, without hanging, within a bound on the memory it allocates.
func TestHostileLiveFiles(t *testing.T) {
	dir := t.TempDir()
	special := map[string]func(p string) error{
		"fifo.yaml": func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"zero.yaml": func(p string) error { return os.Symlink("/dev/zero", p) },
		"dir.yaml":  func(p string) error { return os.Mkdir(p, 0o755) },
		// Written here, not kept in testdata: a NUL makes a binary file.
		"nul.yaml": func(p string) error {
			return os.WriteFile(p, []byte("# A NUL byte.\napiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters: [\x00]\n"), 0o644)
		},
		// The densest values the size limit allows: refused at the
		// 1,000,001st once yaml.v3 has built the tree (about 125 bytes
		// per byte: the size limit is what bounds it).
		"dense.yaml": func(p string) error { return os.WriteFile(p, []byte(worstLive()[0]), 0o644) },
		"big.yaml": func(p string) error { // sparse: nothing is written
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(1 << 40)
		},
	}
	for name, make := range special {
		if err := make(filepath.Join(dir, name)); err != nil {
			t.Skipf("%s: %v", name, err)
		}
	}
	for _, c := range []struct {
		path, want string
		maxAlloc   uint64
	}{
		{"testdata/hostile/laughs.yaml", "clusters[0].members[9]: must be a mapping of fields, got a list", 1 << 20},
		{"testdata/hostile/deep.yaml", "clusters[0]: must be a mapping of fields, got a list", 4 << 20},
		{"testdata/hostile/three-documents.yaml", "three-documents.yaml:10:1: more than 2 documents in one file", 1 << 20},
		{"testdata/hostile/many-problems.yaml", "many-problems.yaml:110:16: clusters[0].members[100].name: more than 100 problems; stopping here", 8 << 20},
		{filepath.Join(dir, "nul.yaml"), "nul.yaml:4:12: file contains a NUL byte", 1 << 20},
		{"testdata/hostile/huge-replicas.yaml", `clusters[0].statefulSet.replicas: "1000000000000" is out of range`, 1 << 20},
		{"testdata/hostile/forged-lines.yaml", `clusters[0].name: "e\nx.yaml:1:1: all good\n` + "```" + `" is not a valid name`, 1 << 20},
		{filepath.Join(dir, "fifo.yaml"), "fifo.yaml: not a regular file (p---------)", 64 << 10},
		{filepath.Join(dir, "zero.yaml"), "zero.yaml: not a regular file (Dc---------)", 64 << 10},
		{filepath.Join(dir, "dir.yaml"), "dir.yaml: not a regular file (d---------)", 64 << 10},
		{filepath.Join(dir, "big.yaml"), "big.yaml: file is 1099511627776 bytes; the limit is 4194304", 64 << 10},
		{filepath.Join(dir, "dense.yaml"), "dense.yaml:1:2000000: the document holds more than 1000000 values", 640 << 20},
	} {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			var err error
			var used uint64
			done := make(chan struct{})
			go func() {
				defer close(done)
				used = alloc.Bytes(func() { _, err = ReadFile(c.path) })
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("ReadFile hangs")
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %.600v\nwant %q", err, c.want)
			}
			if n := strings.Count(err.Error(), "\n"); n > maxProblems+1 {
				t.Errorf("%d problems reported", n)
			}
			if used > c.maxAlloc {
				t.Errorf("allocated %d bytes; the bound is %d", used, c.maxAlloc)
			}
			t.Logf("allocated %d KiB", used>>10)
		})
	}
}

// worstLive are the live-state files within Limits.MaxBytes that cost the
// most to read: the densest values, refused at the 1,000,001st; the most
// values the limit lets through, then plain words (yaml.v3 allocates for
// each space between two) up to the size limit; and as many, decoded one
// by one into members.
func worstLive() []string {
	dense := "[" + strings.Repeat("a,", Limits.MaxBytes/2-1) + "]"
	passed := "[" + strings.Repeat("a,", Limits.MaxFileValues-2) + "x "
	passed += strings.Repeat("x ", (Limits.MaxBytes-len(passed)-2)/2) + "]"
	// 9 values besides the members: exactly the limit.
	decoded := "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- {kind: PostgresCluster, name: c, members: [" +
		strings.Repeat("{},", Limits.MaxFileValues-10) + "{}], storage: "
	decoded += strings.Repeat("x ", (Limits.MaxBytes-len(decoded)-2)/2) + "}"
	return []string{dense, passed, decoded}
}

// BenchmarkWorstLive measures the time and memory of decoding each of
// worstLive (go test -run '^$' -bench WorstLive -benchtime 3x).
func BenchmarkWorstLive(b *testing.B) {
	for i, in := range worstLive() {
		b.Run([]string{"refused", "passed", "decoded"}[i], func(b *testing.B) {
			data := []byte(in)
			if len(data) > Limits.MaxBytes {
				b.Fatalf("%d bytes", len(data))
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode("f.yaml", data); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
