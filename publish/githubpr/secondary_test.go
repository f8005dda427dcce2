package githubpr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
)

// The wait after a secondary limit follows GitHub's guidance: Retry-After
// when given; the reset when no request remains; else a minute, doubled
// for each limit in a row, up to an hour; never the hourly reset of a
// primary limit that has requests left.
func TestSecondaryLimitWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	hourly := strconv.FormatInt(now.Add(57*time.Minute).Unix(), 10)
	tests := []struct {
		name   string
		header map[string]string
		n      int
		want   time.Duration
	}{
		{"Retry-After", map[string]string{"Retry-After": "30", "X-RateLimit-Reset": hourly, "X-RateLimit-Remaining": "10"}, 1, 30 * time.Second},
		{"Retry-After 0 is a second", map[string]string{"Retry-After": "0"}, 3, time.Second},
		{"Retry-After wins over a backoff", map[string]string{"Retry-After": "5"}, 4, 5 * time.Second},
		{"no request remains: the reset", map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": hourly}, 1, 57*time.Minute + time.Second},
		{"first without Retry-After: a minute, not the hourly reset", map[string]string{"X-RateLimit-Remaining": "4990", "X-RateLimit-Reset": hourly}, 1, time.Minute},
		{"second in a row", map[string]string{"X-RateLimit-Reset": hourly}, 2, 2 * time.Minute},
		{"fourth in a row", nil, 4, 8 * time.Minute},
		{"seventh in a row: an hour", nil, 7, time.Hour},
		{"many in a row: still an hour", nil, 40, time.Hour},
		{"a Retry-After that is not a number", map[string]string{"Retry-After": "soon"}, 1, time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			if got := limitWait(h, tc.n, now); got != tc.want {
				t.Errorf("limit %d in a row with %v: wait %s, want %s", tc.n, tc.header, got, tc.want)
			}
		})
	}
}

// fakeClock makes a provider's waits for rate limits pass at once, in a
// clock of its own that the secondary limit's backoff reads.
func fakeClock(p *Provider) *[]time.Duration {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var waits []time.Duration
	p.transport.limit.now = func() time.Time { return now }
	p.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); now = now.Add(d); return nil }
	return &waits
}

// A secondary limit without Retry-After (403 or 429, with the hourly
// X-RateLimit-Reset GitHub sends on every answer) is waited out from a
// minute, exponentially, and never blocks the client until the hourly
// reset: the next call after the wait is sent, and a success starts the
// backoff over.
func TestSecondaryLimitsWithoutRetryAfterBackOff(t *testing.T) {
	for _, kind := range []string{"secondary-bare", "429-bare"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			f := githubtest.New(t)
			p, _ := newProvider(t, f.URL, f.Token)
			waits := fakeClock(p)
			f.LimitNext, f.LimitKind = 3, kind
			if _, err := p.Find(ctx, "cairn/db/s"); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(*waits) != "[1m0s 2m0s 4m0s]" {
				t.Errorf("waits %v, want 1m, 2m, 4m", *waits)
			}
			// Sent at once: go-github holds nothing back until the hourly reset.
			calls := f.Calls["GET /repos/o/r/pulls"]
			if _, err := p.Find(ctx, "cairn/db/s"); err != nil || f.Calls["GET /repos/o/r/pulls"] != calls+1 || len(*waits) != 3 {
				t.Fatalf("the next call: %v, %d calls sent (want %d), waits %v", err, f.Calls["GET /repos/o/r/pulls"], calls+1, *waits)
			}
			// A success ended the run: the next limit waits a minute again.
			f.LimitNext = 1
			if _, err := p.Find(ctx, "cairn/db/s"); err != nil || (*waits)[3] != time.Minute {
				t.Fatalf("a later limit: %v, waits %v", err, *waits)
			}
		})
	}
}

// While a secondary limit's wait runs, cairn sends nothing: a call that
// may not wait that long fails without a request, and goes once the wait
// is over.
func TestNothingIsSentWhileASecondaryLimitHolds(t *testing.T) {
	ctx := context.Background()
	f := githubtest.New(t)
	p, _ := newProvider(t, f.URL, f.Token)
	waits := fakeClock(p)
	p.MaxWait = 30 * time.Second
	f.LimitNext, f.LimitKind = 1, "secondary-bare"
	if _, err := p.Find(ctx, "cairn/db/s"); err == nil {
		t.Fatal("a limit longer than cairn waits: no error")
	}
	sent := f.Calls["GET /repos/o/r/pulls"]
	_, err := p.Open(ctx, want("cairn/db/s"))
	var held *LimitedError
	if !errors.As(err, &held) || !errors.Is(err, ErrSecondaryLimit) || held.Wait != time.Minute || f.Calls["POST /repos/o/r/pulls"] != 0 || f.Calls["GET /repos/o/r/pulls"] != sent {
		t.Fatalf("a call while the limit holds: %v (calls %v)", err, f.Calls)
	}
	_ = p.sleep(ctx, time.Minute) // the wait passes
	if _, err := p.Open(ctx, want("cairn/db/s")); err != nil || len(f.Open()) != 1 {
		t.Fatalf("after the wait: %v, waits %v", err, *waits)
	}
}
