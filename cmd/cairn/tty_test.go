package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// buildCairn builds the cairn binary into a temporary folder.
func buildCairn(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cairn")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// ptyRun is a process on a pseudo-terminal and what it wrote there.
type ptyRun struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startOnPTY(t *testing.T, bin string, args ...string) *ptyRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(withoutVar(os.Environ(), "NO_COLOR"), "TERM=xterm")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 300})
	if err != nil {
		t.Fatal(err)
	}
	r := &ptyRun{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = f.Close() })
	return r
}

// withoutVar is env without the variable name, so the child has it
// unset.
func withoutVar(env []string, name string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

// text is what the process wrote so far, with the terminal's CRLF line
// ends read as LF.
func (r *ptyRun) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.ReplaceAll(r.out.String(), "\r\n", "\n")
}

// waitFor waits until the output holds s.
func (r *ptyRun) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(r.text(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q after %s; output:\n%s", s, timeout, r.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exitCode waits for the process and returns its exit code.
func (r *ptyRun) exitCode(t *testing.T) int {
	t.Helper()
	err := r.cmd.Wait()
	<-r.done
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// TestTerminal runs the built binary on a pseudo-terminal: cairn status
// aligns and colours its table there and not when piped; cairn backup run
// says what it waits for while it waits, and Ctrl-C ends it cleanly with
// exit code 130.
func TestTerminal(t *testing.T) {
	bin := buildCairn(t)
	repo := "testdata/status-fleet"
	args := []string{"status", "--repo", repo, "--live", repo + "/live.yaml", "--now", statusNow}

	r := startOnPTY(t, bin, args...)
	if code := r.exitCode(t); code != exitRefusals {
		t.Fatalf("status on a terminal: exit %d\n%s", code, r.text())
	}
	want, _ := os.ReadFile("testdata/status-fleet.tty")
	if r.text() != string(want) {
		t.Errorf("status on a terminal differs from testdata/status-fleet.tty:\n%q", r.text())
	}
	piped, _ := exec.Command(bin, args...).Output()
	want, _ = os.ReadFile("testdata/status-fleet.txt")
	if string(piped) != string(want) {
		t.Errorf("status piped differs from testdata/status-fleet.txt:\n%s", piped)
	}

	cp := testbed.Shared(t, testbed.Options{})
	ns := cp.Namespace(t, "tty")
	// A cluster with a backup policy, whose runtime does not run.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("kv"), Namespace: ns},
		Data: map[string]string{contract.KeyBackupSchedule: "0 2 * * *", contract.KeyBackupStorageLocation: "file:///backups"}}
	if _, err := cp.Client(t).CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = startOnPTY(t, bin, "backup", "run", "kv", "--kubeconfig", cp.Kubeconfig(t), "--namespace", ns)
	r.waitFor(t, "waiting up to 30m0s for the runtime of kv to take backup manual-", 30*time.Second)
	r.waitFor(t, "still waiting for backup manual-", 3*backupProgressEvery)
	r.waitFor(t, "elapsed; the runtime reports no backup yet", time.Second)
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := r.exitCode(t)
	if out := r.text(); code != exitSignal+int(syscall.SIGINT) || !strings.HasSuffix(out, "cairn: interrupted by SIGINT\n") || strings.Contains(out, "ERROR") || strings.Contains(out, "context canceled") {
		t.Errorf("backup run after Ctrl-C: exit %d\n%s", code, out)
	}
}
