package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/testbed/alloc"
)

// withRepoLimits lowers RepoLimits for one test, so that a shape past a
// limit is cheap to build; the code path is the one the real limits take.
func withRepoLimits(t *testing.T, l RepoLimit) {
	old := RepoLimits
	RepoLimits = l
	t.Cleanup(func() { RepoLimits = old })
}

// repoShape builds a hostile repo under dir.
type repoShape struct {
	name   string
	limits RepoLimit
	build  func(t *testing.T, repo string)
	// want is a substring of the error ("" for a load that succeeds).
	want string
	// maxAlloc bounds the bytes the load allocates.
	maxAlloc uint64
}

func manyFiles(dir string, n int, name func(i int) string, content func(i int) string) func(t *testing.T, repo string) {
	return func(t *testing.T, repo string) {
		for i := range n {
			writeFile(t, filepath.Join(repo, dir, name(i)), content(i))
		}
	}
}

func named(i int) string { return sub(pgHead, `"db"`, fmt.Sprintf("db%d", i)) }

func repoShapes() []repoShape {
	small := RepoLimit{MaxEntries: 500, MaxFiles: 100, MaxBytes: 1 << 20, MaxDocuments: 20, MaxErrors: 50}
	return []repoShape{
		{name: "a folder of 3,000 entries", limits: small,
			build: manyFiles("clusters", 3000, func(i int) string { return fmt.Sprintf("e%d", i) }, func(int) string { return "" }),
			want:  "holds more than 500 files and folders; cairn reads at most that many", maxAlloc: 1 << 20},
		{name: "300 spec files", limits: small,
			build: manyFiles("clusters", 300, func(i int) string { return fmt.Sprintf("c%d.yaml", i) }, named),
			want:  "300 spec files; cairn reads at most 100", maxAlloc: 1 << 20},
		{name: "more bytes than the repo limit", limits: small,
			build: manyFiles("clusters", 5, func(i int) string { return fmt.Sprintf("c%d.yaml", i) },
				func(i int) string { return named(i) + "# " + strings.Repeat("x", 400<<10) + "\n" }),
			want: "c3.yaml: not read: the specs hold more than 1048576 bytes", maxAlloc: 16 << 20},
		{name: "more clusters than the repo limit", limits: small,
			build: manyFiles("clusters", 5, func(i int) string { return fmt.Sprintf("c%d.yaml", i) }, func(i int) string {
				var b strings.Builder
				for j := range 6 {
					b.WriteString("---\n" + named(i*10+j))
				}
				return b.String()
			}),
			want: "c4.yaml: not read: the specs hold more than 20 clusters", maxAlloc: 8 << 20},
		{name: "a problem in each of 90 files", limits: small,
			build: manyFiles("clusters", 90, func(i int) string { return fmt.Sprintf("c%02d.yaml", i) }, func(int) string { return "kind: x\n" }),
			want:  "c50.yaml: not read: 50 problems already; fix those first", maxAlloc: 4 << 20},
		{name: "8 MiB of the densest specs", limits: RepoLimits,
			build: manyFiles("clusters", 8, func(i int) string { return fmt.Sprintf("c%d.yaml", i) }, func(int) string { return worstSpecs()[0].in }),
			want:  "clusters/c0.yaml:1:40000: the document holds more than 20000 values", maxAlloc: 8 * 160 << 20},
		{name: "folders 200 deep", limits: RepoLimits,
			build: func(t *testing.T, repo string) {
				writeFile(t, filepath.Join(repo, "clusters", strings.Repeat("d/", 200), "db.yaml"), pgHead)
			}, maxAlloc: 4 << 20},
		{name: "a FIFO named like a spec", limits: RepoLimits,
			build: func(t *testing.T, repo string) {
				writeFile(t, filepath.Join(repo, "clusters", "db.yaml"), pgHead)
				if err := syscall.Mkfifo(filepath.Join(repo, "clusters", "fifo.yaml"), 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			}, want: "clusters/fifo.yaml: not a regular file (p---------)", maxAlloc: 1 << 20},
		{name: "a symlink to /dev/zero", limits: RepoLimits,
			build: func(t *testing.T, repo string) {
				writeFile(t, filepath.Join(repo, "clusters", "db.yaml"), pgHead)
				symlink(t, "/dev/zero", filepath.Join(repo, "clusters", "zero.yaml"))
			}, want: "clusters/zero.yaml: symlink cannot be followed: path escapes from parent", maxAlloc: 1 << 20},
		{name: "a symlink to a folder, named like a spec", limits: RepoLimits,
			build: func(t *testing.T, repo string) {
				writeFile(t, filepath.Join(repo, "other", "x"), "")
				symlink(t, "../other", filepath.Join(repo, "clusters", "dir.yaml"))
			}, want: "clusters/dir.yaml: not a regular file (d---------)", maxAlloc: 1 << 20},
		{name: "a file name that breaks lines and code blocks", limits: RepoLimits,
			build: func(t *testing.T, repo string) {
				writeFile(t, filepath.Join(repo, "clusters", "a\n```\n# forged.yaml"), "kind: x\n")
			}, want: `clusters/a\n` + "```" + `\n# forged.yaml":1:7: kind: unknown kind`, maxAlloc: 1 << 20},
	}
}

// TestHostileRepoShapes: each shape is refused (or read) with a clear
// error, within a bound on the memory the load allocates.
func TestHostileRepoShapes(t *testing.T) {
	for _, c := range repoShapes() {
		t.Run(c.name, func(t *testing.T) {
			repo := filepath.Join(t.TempDir(), "repo")
			if err := os.MkdirAll(filepath.Join(repo, "clusters"), 0o755); err != nil {
				t.Fatal(err)
			}
			c.build(t, repo)
			withRepoLimits(t, c.limits)
			var err error
			done := make(chan struct{})
			var used uint64
			go func() {
				defer close(done)
				used = alloc.Bytes(func() { _, err = LoadRepo(repo, DefaultLayout) })
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the load hangs")
			}
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %.500v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %.1000v\nwant %q", err, c.want)
			}
			if used > c.maxAlloc {
				t.Errorf("allocated %d bytes; the bound is %d", used, c.maxAlloc)
			}
			if err != nil && len(err.Error()) > 64<<10 {
				t.Errorf("the error is %d bytes", len(err.Error()))
			}
			t.Logf("allocated %d KiB", used>>10)
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks: %v", err)
	}
}

// TestLoadPathsNeverWaitsOnAFile: cairn validate follows links given on
// its command line, so a spec may lead to a file of /proc that stat calls
// regular and whose read waits for data that may never come (/proc/kmsg).
// It is refused at once, naming the file.
func TestLoadPathsNeverWaitsOnAFile(t *testing.T) {
	f, err := os.OpenFile("/proc/kmsg", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Skipf("/proc/kmsg: %v (it takes CAP_SYSLOG)", err)
	}
	f.Close()
	dir := t.TempDir()
	link := filepath.Join(dir, "kmsg.yaml")
	symlink(t, "/proc/kmsg", link)
	for _, paths := range [][]string{{link}, {dir}} {
		done := make(chan error, 1)
		go func() {
			_, err := LoadPaths(paths)
			done <- err
		}()
		select {
		case err := <-done:
			// Refused before a byte is read: a read would take the
			// kernel's messages from the system's log reader.
			if err == nil || !strings.Contains(err.Error(), "kmsg.yaml: a file of /proc or /sys") {
				t.Errorf("LoadPaths(%v) = %v, want kmsg.yaml refused", paths, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("LoadPaths(%v) waits on /proc/kmsg", paths)
		}
	}
}
