package instance

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// label is a role label the tests change, and can make unreachable.
type label struct {
	mu          sync.Mutex
	role        string
	unreachable bool
}

func (l *label) set(role string, unreachable bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.role, l.unreachable = role, unreachable
}

func (l *label) confirm(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unreachable {
		return "", errors.New("the API server does not answer")
	}
	return l.role, nil
}

// A primary with data starts only once the API server confirms its role.
func TestPostgresStartsAsPrimaryOnlyConfirmed(t *testing.T) {
	ctx := context.Background()
	b := newPGBed(t)
	s := b.start(b.member(0, "new", 0), StartPrimary)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	l := &label{}
	m := b.member(0, "existing", 0)
	m.Confirm = l.confirm
	for _, c := range []struct {
		role        string
		unreachable bool
		ok          bool
	}{{"primary", true, false}, {"fenced", false, false}, {"replica", false, false}, {"primary", false, true}, {"", false, true}} {
		l.set(c.role, c.unreachable)
		role, _, err := m.Prepare(ctx)
		if c.ok != (err == nil && role == StartPrimary) {
			t.Errorf("label %q unreachable %v: role %s, %v", c.role, c.unreachable, role, err)
		}
		if !c.ok && !errors.Is(err, ErrNoPrimary) {
			t.Errorf("label %q unreachable %v: %v, want ErrNoPrimary", c.role, c.unreachable, err)
		}
	}
}

// A running primary stops when it is fenced, and when it cannot confirm
// its label for its lease.
func TestPostgresWatchdogStopsAFencedOrCutOffPrimary(t *testing.T) {
	b := newPGBed(t)
	l := &label{role: "primary"}
	m := b.member(0, "new", 0)
	m.Confirm, m.ConfirmEvery, m.LeaseTTL = l.confirm, 50*time.Millisecond, time.Second
	for _, c := range []struct {
		name        string
		role        string
		unreachable bool
	}{{"fenced", "fenced", false}, {"cut off", "primary", true}} {
		t.Run(c.name, func(t *testing.T) {
			l.set("primary", false)
			s := b.start(m, StartPrimary)
			done := make(chan error, 1)
			go func() { done <- m.watchdog(context.Background(), s) }()
			time.Sleep(200 * time.Millisecond)
			l.set(c.role, c.unreachable)
			if err := <-done; !errors.Is(err, errDemoted) {
				t.Fatalf("watchdog returned %v, want errDemoted", err)
			}
			if _, err := b.dial(context.Background(), 0); err == nil {
				t.Fatal("the primary still answers")
			}
		})
	}
}
