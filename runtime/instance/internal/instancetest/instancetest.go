// Package instancetest holds the test helpers the tests of both kinds'
// instance managers share (runtime/instance/etcd and
// runtime/instance/postgres): a logger into the test log, free ports and
// loopback hosts, and polling. It is imported by tests only, and imports
// nothing of cairn's.
package instancetest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"
)

// Logger logs to the test log, at debug level.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(Writer(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Writer writes each write as a line of the test log.
func Writer(t testing.TB) io.Writer { return testWriter{t} }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// FreePort returns a port free on ip.
func FreePort(t testing.TB, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Eventually polls fn until it returns nil or the deadline passes.
func Eventually(t testing.TB, timeout time.Duration, what string, fn func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		if last = fn(ctx); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s: %v", what, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// HostOf is member ord's loopback address: 127.0.0.<ord+1>.
func HostOf(ord int) string { return "127.0.0." + strconv.Itoa(ord+1) }
