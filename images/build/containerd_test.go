package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startContainerd starts a containerd of the test's own (its root, state,
// socket and opt folders under a temporary folder; no CRI plugin) and
// returns its socket. It skips the test where containerd cannot run.
func startContainerd(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("containerd runs as root")
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		t.Skip("no containerd (Debian's containerd package)")
	}
	if _, err := exec.LookPath("ctr"); err != nil {
		t.Skip("no ctr")
	}
	dir, err := os.MkdirTemp("", "ctrd-") // short: the socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "containerd.sock")
	cfg := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, filepath.Join(dir, "opt"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
	})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if exec.Command("ctr", "-a", sock, "version").Run() == nil {
			return sock
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("containerd did not answer on %s:\n%s", sock, b)
		}
	}
}

// TestContainerdImportsAndRuns imports an archive into a real containerd
// as `kind load image-archive` does (ctr import from stdin, every
// platform, digests) and, where runc is installed, runs the image's
// program from it.
func TestContainerdImportsAndRuns(t *testing.T) {
	sock := startContainerd(t)
	base, _, _ := fakeRoots(t)
	bin := staticEtcd(t, "3.5.35")
	archive := writeSpec(t, func() (imageSpec, error) { return etcdImage(bin, base, "3.5.35") })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctr := func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, "ctr", append([]string{"-a", sock, "-n", "k8s.io"}, args...)...)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imp := ctr("images", "import", "--all-platforms", "--digests", "--snapshotter", "native", "-")
	imp.Stdin = f
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("ctr images import: %v\n%s", err, out)
	}
	out, err := ctr("images", "ls", "-q").Output()
	if err != nil || !strings.Contains(string(out), "quay.io/coreos/etcd:v3.5.35\n") {
		t.Fatalf("ctr images ls = %q, %v; want quay.io/coreos/etcd:v3.5.35", out, err)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("no runc: imported, not run")
	}
	out, err = ctr("run", "--rm", "--snapshotter", "native", "quay.io/coreos/etcd:v3.5.35", "etcd-version", "etcd", "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "etcd Version: 3.5.35") {
		t.Fatalf("ctr run etcd --version = %q, %v", out, err)
	}
}
