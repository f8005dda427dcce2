package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// hostProgram is a dynamically linked program of this machine that needs
// libc.so.6, to stand for a PostgreSQL program.
func hostProgram(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("no /bin/true: %v", err)
	}
	p := filepath.Join(t.TempDir(), "true")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if needed, _, ok, err := elfDeps(p); err != nil || !ok || !reflect.DeepEqual(needed, []string{"libc.so.6"}) {
		t.Skipf("/bin/true needs %v (%v): not the program this test expects", needed, err)
	}
	return b
}

func TestLibsFor(t *testing.T) {
	prog := string(hostProgram(t))
	from := writeTree(t, map[string]string{
		"usr/lib/postgresql/13/bin/postgres*": prog,
		"lib/x86_64-linux-gnu/libc.so.6":      "-> libc-2.31.so",
		"lib/x86_64-linux-gnu/libc-2.31.so":   "libc 2.31",
		"usr/lib/x86_64-linux-gnu/libicu.so":  "not needed",
	})
	withLibc := writeTree(t, map[string]string{"usr/lib/x86_64-linux-gnu/libc.so.6": "libc 2.36"})
	withoutLibc := t.TempDir()
	files := []string{"usr/lib/postgresql/13/bin/postgres"}
	for _, c := range []struct {
		name string
		base string
		want []string
	}{
		{"the newer root has it", withLibc, nil},
		{"the older root brings it", withoutLibc, []string{"lib/x86_64-linux-gnu/libc-2.31.so", "lib/x86_64-linux-gnu/libc.so.6"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := libsFor(from, c.base, files)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("libsFor = %v, want %v", got, c.want)
			}
		})
	}
	if _, err := libsFor(withoutLibc, withoutLibc, nil); err != nil {
		t.Errorf("no files: %v", err)
	}
	lonely := writeTree(t, map[string]string{"usr/lib/postgresql/13/bin/postgres*": prog})
	if _, err := libsFor(lonely, withoutLibc, files); err == nil || !strings.Contains(err.Error(), "needs libc.so.6, which neither image has") {
		t.Errorf("err = %v, want libc.so.6 in neither image", err)
	}
}

func TestMissingLibs(t *testing.T) {
	prog := string(hostProgram(t))
	for _, c := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"found through an absolute symlink", map[string]string{"bin/p*": prog, "lib64/libc.so.6": "-> /lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libc.so.6": "libc"}, nil},
		{"in usr/lib", map[string]string{"bin/p*": prog, "usr/lib/libc.so.6": "libc"}, nil},
		{"missing", map[string]string{"bin/p*": prog, "opt/libc.so.6": "not searched"}, []string{"bin/p: libc.so.6"}},
		{"a dangling symlink", map[string]string{"bin/p*": prog, "lib/libc.so.6": "-> libc-2.36.so"}, []string{"bin/p: libc.so.6"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := missingLibs(writeTree(t, c.files))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("missingLibs = %v, want %v", got, c.want)
			}
		})
	}
}

// staticEtcd builds a static program that answers --version as etcd does.
func staticEtcd(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	src := "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"etcd Version: " + version + "\\nGit SHA: fake\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module fake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", "etcd", ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "etcd")
}

// TestCheck builds an etcd image as make image does and checks it as
// make image does: its program runs; and an image whose program needs a
// library it lacks fails the check.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	base, _, _ := fakeRoots(t)
	bin := staticEtcd(t, "3.5.35")
	v, err := etcdVersion(ctx, bin)
	if err != nil || v != "3.5.35" {
		t.Fatalf("etcdVersion = %q, %v; want 3.5.35", v, err)
	}
	lines, err := checkArchive(ctx, writeSpec(t, func() (imageSpec, error) { return etcdImage(bin, base, v) }), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"quay.io/coreos/etcd:v3.5.35", "  /usr/local/bin/etcd: etcd Version: 3.5.35"}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("check = %q, want %q", lines, want)
	}

	prog := writeTree(t, map[string]string{"etcd*": string(hostProgram(t))})
	noLibc := writeTree(t, map[string]string{"usr/share/ca-certificates/mozilla/A.crt": "cert"})
	_, err = checkArchive(ctx, writeSpec(t, func() (imageSpec, error) { return etcdImage(filepath.Join(prog, "etcd"), noLibc, "3.5.35") }), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "usr/local/bin/etcd: libc.so.6") {
		t.Errorf("err = %v, want libc.so.6 missing", err)
	}
}

func writeSpec(t *testing.T, build func() (imageSpec, error)) string {
	t.Helper()
	spec, err := build()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "image.tar")
	if err := spec.write(out, dir, time.Unix(0, 0).UTC()); err != nil {
		t.Fatal(err)
	}
	return out
}
