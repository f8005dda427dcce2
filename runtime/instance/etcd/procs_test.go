package etcd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/testbed"
)

// Real etcd processes for the tests, on 127.0.0.x.

// binary finds a test binary: $env, or the repo's .cache/bin built by
// `make testbin` (testbed.Bin: missing, it fails the test, or skips it
// with -short, as every etcd member's test does).
func binary(t *testing.T, env, name string) string {
	t.Helper()
	testbed.Require(t, testbed.TierIntegration, "etcd members")
	if p := os.Getenv(env); p != "" {
		return p
	}
	return testbed.Bin(t, name)
}

// proc is a child process whose output goes to the test log.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  bytes.Buffer
}

func start(t *testing.T, cred *syscall.Credential, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), done: make(chan struct{})}
	p.cmd.Stdout = io.MultiWriter(&lockedWriter{p: p})
	p.cmd.Stderr = p.cmd.Stdout
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	return p
}

type lockedWriter struct{ p *proc }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *proc) kill(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func url(host string, port int) string { return fmt.Sprintf("http://%s:%d", host, port) }
