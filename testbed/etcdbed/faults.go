package etcdbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// errHeld: the test holds the pod's member from starting (Destroy).
var errHeld = errors.New("held by the test")

func (b *Bed) track(m *member) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running == nil {
		b.running = map[string]*member{}
	}
	b.running[m.pod] = m
}

func (b *Bed) isHeld(pod string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held[pod]
}

func (b *Bed) hold(pod string, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == nil {
		b.held = map[string]bool{}
	}
	b.held[pod] = on
}

func (b *Bed) member(pod string) (*member, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.running[pod]
	if m == nil {
		return nil, fmt.Errorf("pod %s has no member running", pod)
	}
	return m, nil
}

// Down kills the etcd of cluster's member ord, as a host that went away
// would, and keeps it from starting again until Up: unlike a
// frozen process (SIGSTOP), it gets nothing sent to it meanwhile later.
func (b *Bed) Down(t testing.TB, cluster string, ord int) {
	t.Helper()
	pod := contract.MemberName(cluster, ord)
	b.hold(pod, true)
	m, err := b.member(pod)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	deadline := time.After(30 * time.Second)
	for {
		if cmd == nil {
			// With TLS on etcd is the supervisor's child (the supervisor
			// then ends, as the container would); between two of its
			// starts there is none to find for a moment.
			if pid, ok := supervisedEtcd(m.etcd.DataDir); ok {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		select {
		case <-m.done:
			return
		case <-deadline:
			t.Fatalf("member %s did not stop", pod)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Up lets a member Down took away start again, from its data.
func (b *Bed) Up(cluster string, ord int) { b.hold(contract.MemberName(cluster, ord), false) }

// Destroy loses the data of cluster's member ord for good, as a lost disk
// would: it holds the pod's member from starting, kills its etcd, empties
// its volume (the data directory and whatever else the volume held), and
// lets the pod start again on the empty volume.
func (b *Bed) Destroy(ctx context.Context, t testing.TB, cluster string, ord int) {
	t.Helper()
	pod := contract.MemberName(cluster, ord)
	m, err := b.member(pod)
	if err != nil {
		t.Fatal(err)
	}
	b.Down(t, cluster, ord)
	defer b.Up(cluster, ord)
	claim, err := b.client.CoreV1().PersistentVolumeClaims(b.ns).Get(ctx, contract.DataClaim(pod), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	volume := filepath.Join(b.dir, string(claim.UID))
	if err := os.RemoveAll(volume); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(volume, 0o700); err != nil {
		t.Fatal(err)
	}
	// The node restarts the exited container; held until now, it finds
	// the empty volume.
	testbed.Eventually(t, "a new start of "+pod, func() error {
		if cur, err := b.member(pod); err != nil || cur == m {
			return fmt.Errorf("not restarted yet")
		}
		return nil
	})
}

// supervisedEtcd finds the etcd process that runs on dataDir (each
// member's is its own) among this process's children: with TLS on the
// instance manager's supervisor starts it, and the bed has no handle on
// it.
func supervisedEtcd(dataDir string) (int, bool) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	want := "\x00--data-dir\x00" + dataDir + "\x00"
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), want) || parentOf(pid) != os.Getpid() {
			continue
		}
		return pid, true
	}
	return 0, false
}

// parentOf is pid's parent's pid, from /proc/<pid>/stat (its fourth
// field, after the command's parenthesised name).
func parentOf(pid int) int {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}
