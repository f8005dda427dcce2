package reconcile

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The connection-level bounds Server sets. A request's headers are at
// most maxWebhookHeader bytes (net/http allows 4 KiB of slack and
// answers 431 past it) read within webhookHeaderTimeout, so an
// unfinished header holds at most ~20 KiB for at most that long; with
// MaxConns connections, what the unfinished headers hold together is
// bounded before a byte is allocated for them.
const (
	maxWebhookHeader     = 16 << 10
	webhookHeaderTimeout = 5 * time.Second
	// webhookRequestTimeout bounds the whole request (headers and body),
	// and the answer's writing.
	webhookRequestTimeout = webhookHeaderTimeout + webhookReadTimeout
	webhookIdleTimeout    = 30 * time.Second
)

// Server is an http.Server serving h on addr with the webhook's
// connection-level bounds: the header size, the deadlines (header, whole
// request, idle) and MaxConns connections at once, the one open longest
// without a request in the handler (an unfinished header, a slow sender,
// an idle keep-alive) closed for a new one.
func (h *Webhook) Server(addr string) *http.Server {
	h.init()
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		MaxHeaderBytes:    maxWebhookHeader,
		ReadHeaderTimeout: webhookHeaderTimeout,
		ReadTimeout:       webhookRequestTimeout,
		WriteTimeout:      webhookRequestTimeout,
		IdleTimeout:       webhookIdleTimeout,
		ConnContext:       h.conns.connContext,
		ConnState:         h.conns.connState,
	}
}

// readerPool holds the requests reading their bodies, oldest first. A
// request past max cuts off the oldest: a slow sender is cut off by the
// newer requests, whoever sent them, and a delivery that sends its body
// at once is cut off only when max newer requests arrive while it reads.
type readerPool struct {
	mu   sync.Mutex
	max  int
	held []*reader
}

// reader is one request reading its body; cut, called at most once,
// ends its read.
type reader struct {
	cutOff func()
	cut    atomic.Bool
}

// enter adds a reader, cutting off the oldest when the pool is full.
func (p *readerPool) enter(cutOff func()) *reader {
	r := &reader{cutOff: cutOff}
	p.mu.Lock()
	var oldest *reader
	if len(p.held) >= p.max {
		oldest = p.held[0]
		p.held = p.held[1:]
	}
	p.held = append(p.held, r)
	p.mu.Unlock()
	if oldest != nil {
		oldest.cut.Store(true)
		oldest.cutOff()
	}
	return r
}

// leave removes a reader, if it was not cut off already.
func (p *readerPool) leave(r *reader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.held {
		if x == r {
			p.held = append(p.held[:i], p.held[i+1:]...)
			return
		}
	}
}

// reading is how many requests are reading their bodies.
func (p *readerPool) reading() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// connTracker keeps Server's connections in the order they were
// accepted and closes the oldest with no request in the handler when
// there are more than max. It counts, as refusals, the connections
// closed that way and those net/http closed on a request that never
// reached the handler (a header too large, malformed or not sent in
// time: net/http answers those itself, if at all, unlogged).
type connTracker struct {
	max    int
	refuse func(reason, remote string)

	mu    sync.Mutex
	seq   uint64
	conns map[net.Conn]*trackedConn
}

type trackedConn struct {
	conn net.Conn
	seq  uint64
	// requests counts the requests that began arriving (StateActive),
	// handled those that reached the handler; inHandler is whether one
	// is there now.
	requests, handled int
	inHandler         bool
	evicted           bool
}

type connKey struct{}

// connContext registers a new connection and puts it in its context.
func (t *connTracker) connContext(ctx context.Context, c net.Conn) context.Context {
	t.mu.Lock()
	t.seq++
	tc := &trackedConn{conn: c, seq: t.seq}
	t.conns[c] = tc
	t.mu.Unlock()
	return context.WithValue(ctx, connKey{}, tc)
}

// handling marks the connection of a request that reached the handler.
func (t *connTracker) handling(ctx context.Context) {
	tc, ok := ctx.Value(connKey{}).(*trackedConn)
	if !ok {
		return // served without Server
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tc.handled++
	tc.inHandler = true
}

func (t *connTracker) connState(c net.Conn, state http.ConnState) {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = nc.NetConn() // a TLS connection: tracked by the one under it
	}
	t.mu.Lock()
	tc := t.conns[c]
	if tc == nil {
		t.mu.Unlock()
		return
	}
	var evict *trackedConn
	headerRefused := false
	switch state {
	case http.StateNew:
		if len(t.conns) > t.max {
			evict = t.oldestIdle()
			if evict == nil {
				evict = tc // every other one is in the handler
			}
			evict.evicted = true
		}
	case http.StateActive:
		tc.requests++
	case http.StateIdle:
		tc.inHandler = false
	case http.StateClosed, http.StateHijacked:
		delete(t.conns, c)
		headerRefused = !tc.evicted && tc.requests > tc.handled
	}
	t.mu.Unlock()
	if evict != nil {
		t.refuse(refusedConnections, evict.conn.RemoteAddr().String())
		_ = evict.conn.Close()
	}
	if headerRefused {
		t.refuse(refusedHeader, c.RemoteAddr().String())
	}
}

// oldestIdle is the oldest connection with no request in the handler,
// not already being closed.
func (t *connTracker) oldestIdle() *trackedConn {
	var oldest *trackedConn
	for _, tc := range t.conns {
		if !tc.inHandler && !tc.evicted && (oldest == nil || tc.seq < oldest.seq) {
			oldest = tc
		}
	}
	return oldest
}

// open is how many connections are open.
func (t *connTracker) open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}
