package postgres

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
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
// its label for its lease; fenced with a confirmation interval far off,
// it stops as soon as it is notified on contract.PostgresConfirmChannel,
// as the runtime nudges it.
func TestPostgresWatchdogStopsAFencedOrCutOffPrimary(t *testing.T) {
	b := newPGBed(t)
	l := &label{role: "primary"}
	m := b.member(0, "new", 0)
	m.Confirm, m.LeaseTTL = l.confirm, time.Second
	for _, c := range []struct {
		name        string
		every       time.Duration
		role        string
		unreachable bool
		nudge       bool
	}{
		{"fenced", 50 * time.Millisecond, "fenced", false, false},
		{"cut off", 50 * time.Millisecond, "primary", true, false},
		{"fenced and nudged", time.Hour, "fenced", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l.set("primary", false)
			m.ConfirmEvery = c.every
			if c.nudge {
				m.LeaseTTL = time.Hour
			}
			s := b.start(m, StartPrimary)
			done := make(chan error, 1)
			go func() { done <- m.watchdog(context.Background(), s) }()
			time.Sleep(500 * time.Millisecond) // the first confirmation, and the LISTEN session
			l.set(c.role, c.unreachable)
			if c.nudge {
				b.notify(t, 0)
			}
			select {
			case err := <-done:
				if !errors.Is(err, errDemoted) {
					t.Fatalf("watchdog returned %v, want errDemoted", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the watchdog did not stop the primary")
			}
			if _, err := b.dial(context.Background(), 0); err == nil {
				t.Fatal("the primary still answers")
			}
		})
	}
}

// notify nudges member ord as the runtime does.
func (b *pgBed) notify(t *testing.T, ord int) {
	t.Helper()
	c, err := b.dial(context.Background(), ord)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), "NOTIFY "+contract.PostgresConfirmChannel); err != nil {
		t.Fatal(err)
	}
}

// fakeAPI is a role label behind an API server the test controls: it
// answers, fails, or hangs until the confirmation's deadline, and keeps
// when each answered confirmation was sent.
type fakeAPI struct {
	mu       sync.Mutex
	role     string
	fail     bool
	hang     bool
	answered []time.Time
	nudge    chan struct{}
}

func (f *fakeAPI) set(change func(f *fakeAPI)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeAPI) confirm(ctx context.Context) (string, error) {
	sent := time.Now()
	f.mu.Lock()
	role, fail, hang := f.role, f.fail, f.hang
	f.mu.Unlock()
	switch {
	case hang:
		<-ctx.Done()
		return "", ctx.Err()
	case fail:
		return "", errors.New("the API server does not answer")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answered = append(f.answered, sent)
	return role, nil
}

func (f *fakeAPI) lastAnswered() (time.Time, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.answered) == 0 {
		return time.Time{}, 0
	}
	return f.answered[len(f.answered)-1], len(f.answered)
}

// The watchdog's lease kept against a fake API server: how soon it stops
// a primary labelled away or cut off, and how seldom it confirms one that
// is neither.
func TestKeepLease(t *testing.T) {
	for _, c := range []struct {
		name       string
		every, ttl time.Duration
		// confirmedBefore: Prepare confirmed this long before the
		// watchdog started (0: it did not).
		confirmedBefore time.Duration
		// after this long, change the API server (nudging when nudge).
		after  time.Duration
		change func(f *fakeAPI)
		nudge  bool
		// run: how long a lease that is not given up is kept.
		run time.Duration
		// want: errDemoted or nil; within: given up at most this long
		// after the change; leaseBound: given up no sooner than the
		// lease's end and at most 500ms after; maxConfirms: at most this
		// many confirmations answered.
		want        error
		within      time.Duration
		leaseBound  bool
		maxConfirms int
	}{
		{name: "fenced and nudged: stops at once, not at the next confirmation", every: 10 * time.Second, ttl: 40 * time.Second,
			after: 300 * time.Millisecond, change: func(f *fakeAPI) { f.role = "fenced" }, nudge: true, want: errDemoted, within: 3 * time.Second},
		{name: "labelled replica: stops at the next confirmation", every: 300 * time.Millisecond, ttl: 20 * time.Second,
			after: 100 * time.Millisecond, change: func(f *fakeAPI) { f.role = "replica" }, want: errDemoted, within: 3 * time.Second},
		{name: "cut off: stops when the lease from the last confirmation's send ends", every: 200 * time.Millisecond, ttl: time.Second,
			after: 300 * time.Millisecond, change: func(f *fakeAPI) { f.fail = true }, want: errDemoted, leaseBound: true},
		{name: "hanging: stops when the lease ends, a confirmation in flight", every: 500 * time.Millisecond, ttl: time.Second,
			after: 100 * time.Millisecond, change: func(f *fakeAPI) { f.hang = true }, want: errDemoted, leaseBound: true},
		{name: "a nudge while cut off does not keep the lease", every: 200 * time.Millisecond, ttl: time.Second,
			after: 300 * time.Millisecond, change: func(f *fakeAPI) { f.fail = true }, nudge: true, want: errDemoted, leaseBound: true},
		{name: "healthy: confirms once an interval, keeps the lease", every: 250 * time.Millisecond, ttl: time.Second,
			run: 2 * time.Second, maxConfirms: 2*4 + 2},
		{name: "Prepare's confirmation is where the lease starts: run out, it stops before confirming", every: 250 * time.Millisecond, ttl: time.Second,
			confirmedBefore: 2 * time.Second, run: 2 * time.Second, want: errDemoted, maxConfirms: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeAPI{role: "primary", nudge: make(chan struct{}, 1)}
			p := &Manager{Name: "pg-0", Confirm: f.confirm, ConfirmEvery: c.every, LeaseTTL: c.ttl, Log: slog.New(slog.DiscardHandler),
				nudges: func(ctx context.Context, out chan<- struct{}) {
					for {
						select {
						case <-ctx.Done():
							return
						case <-f.nudge:
							out <- struct{}{}
						}
					}
				}}
			if c.confirmedBefore > 0 {
				p.confirmedAt = time.Now().Add(-c.confirmedBefore)
			}
			run := c.run
			if run == 0 {
				run = 2 * c.ttl
			}
			ctx, cancel := context.WithTimeout(context.Background(), run)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- p.keepLease(ctx, nil) }()
			var changed time.Time
			if c.change != nil {
				time.Sleep(c.after)
				f.set(c.change)
				changed = time.Now()
				if c.nudge {
					f.nudge <- struct{}{}
				}
			}
			err := <-done
			stopped := time.Now()
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("keepLease returned %v, want %v", err, c.want)
			}
			last, n := f.lastAnswered()
			if c.within > 0 && stopped.Sub(changed) > c.within {
				t.Errorf("stopped %s after the change, want within %s", stopped.Sub(changed), c.within)
			}
			if c.leaseBound {
				// The keeper counts the lease from its own clock read
				// before the call, which a loaded machine may put a
				// little before the fake's read of it: early by that
				// much is still the lease's end.
				end := last.Add(c.ttl)
				if stopped.Before(end.Add(-100*time.Millisecond)) || stopped.Sub(end) > 500*time.Millisecond {
					t.Errorf("stopped %s after the lease's end (the last confirmation's send + %s), want within [-100ms, 500ms]", stopped.Sub(end), c.ttl)
				}
			}
			if c.run > 0 && n > c.maxConfirms {
				t.Errorf("%d confirmations in %s, want at most %d", n, c.run, c.maxConfirms)
			}
		})
	}
}
