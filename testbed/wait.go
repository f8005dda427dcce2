package testbed

import (
	"bytes"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"
)

// Eventually calls fn until it returns nil, failing the test with fn's
// last error after a minute.
func Eventually(t testing.TB, what string, fn func() error) {
	t.Helper()
	EventuallyWithin(t, time.Minute, what, fn)
}

// EventuallyWithin is Eventually with a bound of its own, for what takes
// longer than a minute (or must take less).
func EventuallyWithin(t testing.TB, within time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Logger logs at level and above into the test's log. What a goroutine
// the test left behind logs once the test's cleanups have run goes to
// standard error: a test that has ended cannot log.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.end)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type testWriter struct {
	t     testing.TB
	mu    sync.Mutex
	ended bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return os.Stderr.Write(p)
	}
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// end sends later lines to standard error; it waits for a line being
// written to the test's log.
func (w *testWriter) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}
