package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRenderRefusesRenderedOutsideTheRepo: a rendered/ that is a symlink,
// or holds one (or a FIFO), is refused before anything is written or
// deleted, and what it points at is left as it was.
func TestRenderRefusesRenderedOutsideTheRepo(t *testing.T) {
	spec, err := os.ReadFile("../../examples/fleet/clusters/my-etcd-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		build func(t *testing.T, repo, outside string)
		want  string
	}{
		{"rendered a symlink out of the repo", func(t *testing.T, repo, outside string) {
			mustSymlink(t, outside, filepath.Join(repo, "rendered"))
		}, "rendered is a symlink; cairn writes rendered/ itself and does not follow one"},
		{"a cluster's folder a symlink out of the repo", func(t *testing.T, repo, outside string) {
			mustSymlink(t, outside, filepath.Join(repo, "rendered", "my-etcd-cluster"))
		}, "rendered/my-etcd-cluster is a symlink"},
		{"a symlinked file", func(t *testing.T, repo, outside string) {
			mustSymlink(t, filepath.Join(outside, "keep.yaml"), filepath.Join(repo, "rendered", "my-etcd-cluster", "base", "statefulset.yaml"))
		}, "rendered/my-etcd-cluster/base/statefulset.yaml is a symlink"},
		{"a FIFO", func(t *testing.T, repo, _ string) {
			p := filepath.Join(repo, "rendered", "my-etcd-cluster", "kustomization.yaml")
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "rendered/my-etcd-cluster/kustomization.yaml is not a regular file"},
		{"rendered a file", func(t *testing.T, repo, _ string) {
			if err := os.WriteFile(filepath.Join(repo, "rendered"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "rendered is not a folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := writeRepo(t, map[string]string{"clusters/my-etcd-cluster.yaml": string(spec)})
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "keep.yaml"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			c.build(t, repo, outside)
			code, out, errOut := cairn(t, "render", "--repo", repo)
			if code != exitInvalid || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, out, errOut, c.want)
			}
			entries, _ := os.ReadDir(outside)
			if data, _ := os.ReadFile(filepath.Join(outside, "keep.yaml")); len(entries) != 1 || string(data) != "keep" {
				t.Errorf("the folder outside the repo changed: %d entries, keep.yaml %q", len(entries), data)
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks: %v", err)
	}
}
