package reconcile

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/promtest"
)

func TestReaderPoolCutsOffTheOldest(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		ops  string // e: enter a new reader, l<i>: reader i leaves
		cut  string // the readers cut off, by index
	}{
		{"under the bound", 2, "e e", ""},
		{"one past", 2, "e e e", "0"},
		{"the oldest, each time", 2, "e e e e e", "012"},
		{"a reader that left is not cut", 2, "e e l0 e e", "1"},
		{"leaving frees the slot", 1, "e l0 e l1 e", ""},
		{"one slot: each newer cuts the one before", 1, "e e e", "01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &readerPool{max: tc.max}
			var readers []*reader
			cutCalls := ""
			for _, op := range strings.Fields(tc.ops) {
				if op == "e" {
					i := len(readers)
					readers = append(readers, p.enter(func() { cutCalls += fmt.Sprint(i) }))
					continue
				}
				var i int
				fmt.Sscanf(op, "l%d", &i)
				p.leave(readers[i])
			}
			got := ""
			for i, r := range readers {
				if r.cut.Load() {
					got += fmt.Sprint(i)
				}
			}
			if got != tc.cut || cutCalls != tc.cut || p.reading() > tc.max {
				t.Errorf("cut %q (cut off called for %q), %d reading; want %q, at most %d", got, cutCalls, p.reading(), tc.cut, tc.max)
			}
		})
	}
}

// The server's bounds are set before a byte of a request is read: a
// header is at most 16 KiB (+4 KiB net/http's slack), read within
// deadlines, and connections are capped. 1,000 unfinished 1 MB headers
// hold at most MaxConns × ~20 KiB (BenchmarkWebhookUnfinishedHeaders).
func TestWebhookServerBounds(t *testing.T) {
	h := &Webhook{Secret: []byte("k"), Base: "main", Trigger: make(chan struct{}, 1)}
	s := h.Server(":0")
	if s.MaxHeaderBytes != 16<<10 || s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 ||
		s.ConnState == nil || s.ConnContext == nil || h.conns.max != 256 || h.readers.max != 8 {
		t.Errorf("bounds: header %d, deadlines %s %s %s %s, connections %d, readers %d", s.MaxHeaderBytes,
			s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, h.conns.max, h.readers.max)
	}
	if s.ReadTimeout < s.ReadHeaderTimeout+webhookReadTimeout {
		t.Errorf("ReadTimeout %s cuts a body read within webhookReadTimeout after the header", s.ReadTimeout)
	}
}

// A header over the bound is answered 431 by net/http, never reaching
// the handler; the webhook logs and counts it.
func TestWebhookCountsHeadersRefused(t *testing.T) {
	srv, h, reg, logs := webhookServer(t, 4, 2)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n", strings.Repeat("a", 1<<20))
	answer, _ := io.ReadAll(conn)
	conn.Close()
	if !bytes.HasPrefix(answer, []byte("HTTP/1.1 431 ")) {
		t.Errorf("answer %q", answer[:min(len(answer), 40)])
	}
	waitFor(t, "the refusal counted", func() bool { return refused(t, reg, refusedHeader) == 1 })
	srv.Close()
	if !strings.Contains(logs.String(), "reason=header") || h.conns.open() != 0 {
		t.Errorf("log %q, %d connections open", logs, h.conns.open())
	}
}

// Many unfinished headers and slow unauthenticated bodies while signed
// deliveries arrive: every delivery is accepted; the slow senders are
// cut off, and each refusal logged and counted.
func TestWebhookUnderSlowSenders(t *testing.T) {
	const maxConns, maxReaders, n = 16, 4, 29
	srv, h, reg, logs := webhookServer(t, maxConns, maxReaders)
	addr := srv.Listener.Addr().String()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	open := func(prefix string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		_, _ = io.WriteString(c, prefix)
	}
	unfinished := "POST / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 1000)
	slow := "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n" +
		"X-Hub-Signature-256: " + sign("guess", "{}") + "\r\nX-GitHub-Delivery: %s\r\n\r\n{"
	for range 3 * maxConns {
		open(unfinished)
	}
	for i := range 2 * maxReaders {
		open(fmt.Sprintf(slow, fmt.Sprintf("slow-%d", i)))
	}
	// Every first slow sender has entered: the second half cut off the
	// first.
	waitFor(t, "the slow senders reading", func() bool {
		return h.readers.reading() == maxReaders && refused(t, reg, refusedConnections) >= 2*maxConns &&
			refused(t, reg, refusedCutOff) == maxReaders
	})
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range n {
		// Each delivery arrives with a slow sender and unfinished
		// headers newer than the ones the server holds.
		// The new slow sender reads before the delivery arrives: into a
		// full pool it cuts off the oldest reader.
		full, cut := h.readers.reading() == maxReaders, refused(t, reg, refusedCutOff)
		open(fmt.Sprintf(slow, fmt.Sprintf("slow-again-%d", i)))
		open(unfinished)
		open(unfinished)
		waitFor(t, "the new slow sender reading", func() bool {
			return h.readers.reading() == maxReaders && (!full || refused(t, reg, refusedCutOff) == cut+1)
		})
		body := fmt.Sprintf(`{"ref":"refs/heads/main","after":"%d"}`, i)
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", sign("k", body))
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("delivery-%d", i))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("delivery %d: %d, want 202", i, resp.StatusCode)
		}
	}
	if got := promtest.Series(t, reg)["cairn_reconcile_webhook_deliveries_total{}"]; got != n {
		t.Errorf("%v deliveries counted, want %d", got, n)
	}
	// Each delivery cut off the slow sender reading longest, as the
	// second half of the first slow senders did the first half, and the
	// first slow sender of the loop one more (the pool was full). A cut
	// reader counts its refusal when its own handler returns, after the
	// delivery that cut it may have been answered: waited for.
	want := float64(n + maxReaders + 1)
	waitFor(t, fmt.Sprintf("%v readers cut off", want), func() bool { return refused(t, reg, refusedCutOff) == want })
	for _, c := range held {
		c.Close()
	}
	held = nil
	srv.Close()
	for _, want := range []string{"reason=cut_off", "reason=connections"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q logged", want)
		}
	}
}

// BenchmarkWebhookUnfinishedHeaders measures the most heap in use
// (sampled) while 1,000 connections each send a 1 MB header (the report
// of issue 40: 1.58 GB), clients' included.
func BenchmarkWebhookUnfinishedHeaders(b *testing.B) {
	const conns = 1000
	pad := bytes.Repeat([]byte("a"), 1<<20) // one copy, shared by the clients
	for range b.N {
		srv, _, reg, _ := webhookServer(b, 256, 8)
		runtime.GC()
		var before, now runtime.MemStats
		runtime.ReadMemStats(&before)
		var open []net.Conn
		for range conns {
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			open = append(open, c)
			go func() {
				_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Pad: ")
				_, _ = c.Write(pad)
			}()
		}
		peak := uint64(0)
		waitFor(b, "every connection refused", func() bool {
			runtime.ReadMemStats(&now)
			peak = max(peak, now.HeapInuse)
			return refused(b, reg, refusedHeader)+refused(b, reg, refusedConnections) >= conns
		})
		b.ReportMetric(float64(peak-min(peak, before.HeapInuse))/(1<<20), "peak-MiB-heap")
		for _, c := range open {
			c.Close()
		}
		srv.Close()
	}
}

// webhookServer serves a Webhook with its Server's bounds, its metrics in
// reg and its log in logs.
func webhookServer(t testing.TB, maxConns, maxReaders int) (*httptest.Server, *Webhook, *prometheus.Registry, *testbed.SyncBuffer) {
	reg := prometheus.NewRegistry()
	m, err := NewWebhookMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testbed.SyncBuffer{}
	h := &Webhook{Secret: []byte("k"), Base: "main", Trigger: make(chan struct{}, 1), Metrics: m,
		Log: slog.New(slog.NewTextHandler(logs, nil)), MaxConns: maxConns, MaxReaders: maxReaders}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = h.Server("")
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, h, reg, logs
}

func refused(t testing.TB, reg prometheus.Gatherer, reason string) float64 {
	return promtest.Series(t, reg)[fmt.Sprintf("cairn_reconcile_webhook_refused_total{reason=%q}", reason)]
}

// waitFor waits until cond holds; it fails the test only if it never
// does within a minute (no timing is asserted).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}
