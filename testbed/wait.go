package testbed

import (
	"bytes"
	"log/slog"
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

// Logger logs at level and above into the test's log.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
