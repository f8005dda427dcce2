package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
)

func TestRestartVerdict(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name                      string
		recovered, ready, crashed time.Time
		sync                      int
		restart                   bool
		why                       string
	}{
		{name: "a first crash is restarted in place", ready: t0, crashed: t0.Add(time.Hour), restart: true},
		{name: "a crash right after the first start is restarted in place", ready: t0, crashed: t0.Add(time.Millisecond), restart: true},
		{name: "a crash right after a recovery in place is a crash loop", recovered: t0, ready: t0.Add(time.Second), crashed: t0.Add(3 * time.Second),
			why: "crashed again 2s after it recovered in place from the crash at 2026-01-01T00:00:00Z (a crash loop)"},
		{name: "just inside the window: a crash loop", recovered: t0, ready: t0, crashed: t0.Add(contract.PostgresCrashLoopWindow - time.Millisecond), why: "a crash loop"},
		{name: "a window after the recovery: restarted in place again", recovered: t0, ready: t0, crashed: t0.Add(contract.PostgresCrashLoopWindow), restart: true},
		{name: "synchronous replication: failed over from instead", ready: t0, crashed: t0.Add(time.Hour), sync: 1, why: "synchronous replication: a failover loses no acknowledged commit either"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, why := restartVerdict(c.recovered, c.ready, c.crashed, contract.PostgresCrashLoopWindow, c.sync)
			if ok != c.restart || !strings.Contains(why, c.why) || (ok && why != "") {
				t.Errorf("restart %v (%q), want %v (%q)", ok, why, c.restart, c.why)
			}
		})
	}
}

// A primary run by Run whose server is killed (kill -9 of the postmaster
// and every process it started) while the manager lives: the manager
// restarts it in place at once, crash recovery keeps every committed
// row, and the restarted server names the crash
// (contract.PostgresCrashRestartSetting). Killed again right after, it is
// in a crash loop: Run returns the server's exit.
func TestCrashedServerRestartsInPlace(t *testing.T) {
	b := newPGBed(t)
	m := b.member(0, "new", 0)
	// A server killed before its manager has seen it up failed to start:
	// that is no crash to recover from (runUntilUp waits for it).
	up, done := runUntilUp(t, m)
	instancetest.Eventually(t, time.Minute, "pg-0 takes writes", func(ctx context.Context) error {
		c, err := b.dial(ctx, 0)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		_, err = c.Exec(ctx, "CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 100)")
		return err
	})
	first := postmasterPID(t, m)
	// Committed, not checkpointed: only the WAL holds it.
	if _, err := b.conn(0).Exec(context.Background(), "INSERT INTO t SELECT generate_series(101, 200)"); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	KillPostmaster(first)
	var crash string
	instancetest.Eventually(t, time.Minute, "pg-0 recovered in place", func(ctx context.Context) error {
		c, err := b.dial(ctx, 0)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		var n int
		var rec bool
		if err := c.QueryRow(ctx, "SELECT count(*), pg_is_in_recovery(), "+contract.CrashRestartReadSQL+" FROM t").Scan(&n, &rec, &crash); err != nil {
			return err
		}
		if n != 200 || rec {
			return fmt.Errorf("%d rows, in recovery %v", n, rec)
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("Run returned after the first crash: %v", err)
	default:
	}
	if pid := postmasterPID(t, m); pid == first {
		t.Fatalf("the same postmaster %d answers", pid)
	}
	at, err := contract.ParseCrashTime(crash)
	if err != nil || at.Before(before) || at.After(time.Now()) {
		t.Fatalf("%s = %q (%v), want the time of the kill", contract.PostgresCrashRestartSetting, crash, err)
	}

	up.wait(t)
	KillPostmaster(postmasterPID(t, m))
	select {
	case err := <-done:
		var c *errCrashed
		if !errors.As(err, &c) {
			t.Fatalf("Run returned %v, want the server's crash", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return on a crash loop")
	}
	if err := b.ping(0); err == nil {
		t.Fatal("pg-0 answers after a crash loop")
	}
}

// A member of a synchronous cluster is not restarted in place: Run
// returns the server's crash, as before, and the runtime fails over.
func TestSynchronousMemberNotRestartedInPlace(t *testing.T) {
	b := newPGBed(t)
	m := b.member(0, "new", 0)
	m.Config.SynchronousStandbys = 1
	_, done := runUntilUp(t, m)
	KillPostmaster(postmasterPID(t, m))
	select {
	case err := <-done:
		var c *errCrashed
		if !errors.As(err, &c) {
			t.Fatalf("Run returned %v, want the server's crash", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
	}
}

// The postmaster killed alone while one of its backends cannot exit (it
// is stopped, still attached to the shared memory): the instance manager
// kills what is left of the server and restarts it in place.
func TestPostmasterKilledAloneRestartsInPlace(t *testing.T) {
	b := newPGBed(t)
	m := b.member(0, "new", 0)
	up, done := runUntilUp(t, m)
	c := b.conn(0)
	var backend int
	if err := c.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	pm := postmasterPID(t, m)
	if err := syscall.Kill(backend, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pm, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	up.wait(t)
	if err := b.ping(0); err != nil {
		t.Fatal(err)
	}
	if alive(backend) {
		t.Errorf("the stopped backend %d of the dead server lives on", backend)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned: %v", err)
	default:
	}
}

// The instance manager gone with its server (node-like loss): nothing
// restarts it. Cancelling Run while the server is frozen, then killing
// the server, leaves it down.
func TestManagerGoneLeavesServerDown(t *testing.T) {
	b := newPGBed(t)
	m := b.member(0, "new", 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, m, instancetest.Writer(t)) }()
	instancetest.Eventually(t, time.Minute, "pg-0 answers", func(ctx context.Context) error { return b.ping(0) })
	pid := postmasterPID(t, m)
	SignalServer(pid, syscall.SIGSTOP) // the server freezes before its manager goes
	cancel()
	KillPostmaster(pid)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
	}
	if err := b.ping(0); err == nil {
		t.Fatal("pg-0 answers with its manager gone")
	}
}

// upWatch passes the manager's log on and signals each "postgres is up".
// runUntilUp runs m's instance manager (Run) until the test ends, and
// returns once the manager has seen its server up: up sees the next
// times, done gets Run's return.
func runUntilUp(t *testing.T, m *Manager) (up *upWatch, done <-chan error) {
	t.Helper()
	up = &upWatch{w: instancetest.Writer(t), up: make(chan struct{}, 4)}
	m.Log = slog.New(slog.NewTextHandler(up, nil))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, m, instancetest.Writer(t)) }()
	up.wait(t)
	return up, ran
}

type upWatch struct {
	w  io.Writer
	up chan struct{}
}

func (u *upWatch) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`msg="postgres is up"`)) {
		u.up <- struct{}{}
	}
	return u.w.Write(p)
}

func (u *upWatch) wait(t *testing.T) {
	t.Helper()
	select {
	case <-u.up:
	case <-time.After(time.Minute):
		t.Fatal("the manager did not see its server up")
	}
}

func (b *pgBed) ping(ord int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := b.dial(ctx, ord)
	if err != nil {
		return err
	}
	return c.Close(context.Background())
}

// alive: process pid exists and is no zombie (a killed orphan stays one
// until whoever adopted it reaps it).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

func postmasterPID(t *testing.T, m *Manager) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(m.PGData, lockFile))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
