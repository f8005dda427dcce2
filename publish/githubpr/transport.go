package githubpr

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Counts are the API calls of a run.
type Counts struct {
	Reads, Writes, NotModified int64
}

// transport counts calls and makes GETs conditional: a 304 answer is
// served from the cached body of the last 200 for that URL.
type transport struct {
	base  http.RoundTripper
	token string
	// host is the API's host; the token goes to it only, never to a host
	// a redirect points at.
	host string

	reads, writes, notModified atomic.Int64
	// gate spaces and budgets the writes.
	gate *writeGate
	// limit waits out GitHub's secondary rate limits (secondary.go).
	limit *backoff

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	etag   string
	header http.Header
	body   []byte
}

func newTransport(base http.RoundTripper, token string, gate *writeGate) *transport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base, token: token, gate: gate, limit: &backoff{now: time.Now}, cache: map[string]cached{}}
}

func (t *transport) counts() Counts {
	return Counts{Reads: t.reads.Load(), Writes: t.writes.Load(), NotModified: t.notModified.Load()}
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if t.token != "" && req.URL.Host == t.host {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	// While a secondary limit's wait runs, nothing is sent.
	if err := t.limit.hold(); err != nil {
		return nil, err
	}
	if req.Method != http.MethodGet {
		if err := t.gate.wait(req.Context(), req.Method+" "+req.URL.Path); err != nil {
			return nil, err
		}
		t.writes.Add(1)
		return t.send(req)
	}
	t.reads.Add(1)
	key := req.URL.String()
	t.mu.Lock()
	c, ok := t.cache[key]
	t.mu.Unlock()
	if ok {
		req.Header.Set("If-None-Match", c.etag)
	}
	resp, err := t.send(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && ok:
		t.notModified.Add(1)
		resp.Body.Close()
		header := c.header.Clone()
		// Keep the fresh rate-limit headers of the 304.
		for k, v := range resp.Header {
			header[k] = v
		}
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: header, Request: req,
			Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body))}, nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		t.cache[key] = cached{etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: body}
		t.mu.Unlock()
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

// send sends req and notes a secondary rate limit in its answer, or its
// end.
func (t *transport) send(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if secondaryLimited(resp) {
		t.limit.limited(resp)
	} else {
		t.limit.ok()
	}
	return resp, nil
}
