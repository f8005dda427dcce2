package githubpr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GitHub's guidance for a secondary rate limit: wait as Retry-After says;
// without it, until X-RateLimit-Reset when X-RateLimit-Remaining is 0;
// otherwise at least a minute, and exponentially longer while the limit
// goes on. go-github reads X-RateLimit-Reset (the primary limit's hourly
// reset, sent on every answer) as the secondary limit's end and refuses
// every call until then, so cairn keeps the secondary limit to itself:
// the transport decides the wait (backoff), refuses calls until it ends
// (ErrSecondaryLimit, without a request), and takes the limit's headers
// off the answer before go-github reads them.
const (
	// minBackoff is the least wait after a secondary limit without
	// Retry-After; each one more in a row doubles it, up to maxBackoff.
	minBackoff = time.Minute
	maxBackoff = time.Hour
	// waitHeader carries the wait cairn decided on a limited answer.
	waitHeader = "X-Cairn-Retry-After"
	// maxLimitBody bounds what is read of a 403 to tell a limit.
	maxLimitBody = 64 << 10
)

// ErrSecondaryLimit: GitHub's secondary rate limit holds; the call was
// not sent. A *LimitedError carries the wait.
var ErrSecondaryLimit = errors.New("GitHub's secondary rate limit holds")

// LimitedError is a call refused before it was sent, while a secondary
// limit's wait runs.
type LimitedError struct{ Wait time.Duration }

func (e *LimitedError) Error() string {
	return fmt.Sprintf("%v for %s more; the call was not sent", ErrSecondaryLimit, e.Wait.Round(time.Second))
}

// Unwrap makes a LimitedError an ErrSecondaryLimit.
func (e *LimitedError) Unwrap() error { return ErrSecondaryLimit }

// backoff is the secondary limit's state across calls.
type backoff struct {
	mu    sync.Mutex
	n     int       // secondary limits in a row
	until time.Time // no call before
	now   func() time.Time
}

// hold refuses a call while a wait runs.
func (b *backoff) hold() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := b.until.Sub(b.now()); d > 0 {
		return &LimitedError{Wait: d}
	}
	return nil
}

// next is the wait after one more secondary limit whose answer has
// header h.
func (b *backoff) next(h http.Header) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	wait := limitWait(h, b.n, b.now())
	b.until = b.now().Add(wait)
	return wait
}

// ok ends a run of limits: an answer that was not limited.
func (b *backoff) ok() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n = 0
}

// limitWait is the wait after the nth secondary limit in a row, whose
// answer has header h, at now.
func limitWait(h http.Header, n int, now time.Time) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && s >= 0 {
		return max(time.Duration(s)*time.Second, time.Second)
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(reset, 0).Sub(now)+time.Second, time.Second)
		}
	}
	wait := minBackoff
	for i := 1; i < n && wait < maxBackoff; i++ {
		wait *= 2
	}
	return min(wait, maxBackoff)
}

// secondaryLimited reports whether resp is a secondary rate limit: a 429,
// or a 403 whose message or documentation says so, and not the primary
// limit (X-RateLimit-Remaining 0 on a 403, which go-github waits out
// until its reset as GitHub asks). It reads a 403's body and puts it
// back.
func secondaryLimited(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusForbidden:
		if resp.Header.Get("X-RateLimit-Remaining") == "0" {
			return false
		}
	default:
		return false
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLimitBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	text := strings.ToLower(string(body))
	return strings.Contains(text, "secondary rate limit") || strings.Contains(text, "abuse-rate-limits") || strings.Contains(text, "secondary-rate-limits")
}

// limited rewrites a secondary limit's answer for go-github: the wait
// cairn decided in waitHeader, and no Retry-After or X-RateLimit-Reset
// for go-github to block its client on.
func (b *backoff) limited(resp *http.Response) {
	wait := b.next(resp.Header)
	resp.Header = resp.Header.Clone()
	resp.Header.Del("Retry-After")
	resp.Header.Del("X-RateLimit-Reset")
	resp.Header.Set(waitHeader, strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
}
