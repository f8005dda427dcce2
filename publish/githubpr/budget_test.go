package githubpr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// rateServer keeps a primary rate limit as GitHub does, for every client
// of one token: each request answered 200 counts, a conditional one
// answered 304 does not, and every answer says what remains and when the
// window resets.
type rateServer struct {
	*httptest.Server
	mu        sync.Mutex
	remaining int
	reset     time.Time
	over      int // requests answered 403: the limit was exceeded
}

func newRateServer(t *testing.T, remaining int, reset time.Time) *rateServer {
	s := &rateServer{remaining: remaining, reset: reset}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(s.reset.Unix(), 10))
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(s.remaining))
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if s.remaining == 0 {
			s.over++
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.WriteHeader(http.StatusForbidden)
			return
		}
		s.remaining--
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(s.remaining))
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[]"))
	}))
	t.Cleanup(s.Close)
	return s
}

func shareOver(srv *rateServer, replicas func() int, writesPerHour int, now func() time.Time) *http.Client {
	return &http.Client{Transport: &share{next: http.DefaultTransport, replicas: replicas, writesPerHour: writesPerHour, now: now}}
}

func send(c *http.Client, method, url string, header ...string) error {
	req, _ := http.NewRequest(method, url, nil)
	if len(header) == 2 {
		req.Header.Set(header[0], header[1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Three replicas that call in turn each make about a third of what
// remained, and together never more than the budget.
func TestReplicasSplitTheRateBudget(t *testing.T) {
	srv := newRateServer(t, 30, time.Now().Add(time.Hour))
	three := func() int { return 3 }
	clients := []*http.Client{shareOver(srv, three, 0, time.Now), shareOver(srv, three, 0, time.Now), shareOver(srv, three, 0, time.Now)}
	made := make([]int, 3)
	refused := make([]bool, 3)
	for i := 0; !refused[0] || !refused[1] || !refused[2]; i = (i + 1) % 3 {
		if refused[i] {
			continue
		}
		err := send(clients[i], http.MethodGet, srv.URL+fmt.Sprintf("/repos/o/r/pulls?page=%d", made[i]))
		switch {
		case errors.Is(err, ErrBudgetShare):
			refused[i] = true
		case err != nil:
			t.Fatal(err)
		default:
			made[i]++
		}
	}
	for i, n := range made {
		if n < 9 || n > 11 {
			t.Errorf("replica %d made %d requests of 30, want about a third", i, n)
		}
	}
	if srv.over > 0 {
		t.Errorf("%d requests over GitHub's limit; made %v", srv.over, made)
	}
}

// A conditional read answered 304 costs nothing, so it is not counted.
func TestNotModifiedIsNotCounted(t *testing.T) {
	srv := newRateServer(t, 4, time.Now().Add(time.Hour))
	c := shareOver(srv, func() int { return 2 }, 0, time.Now)
	for range 20 {
		if err := send(c, http.MethodGet, srv.URL+"/repos/o/r/pulls", "If-None-Match", `"v1"`); err != nil {
			t.Fatalf("a read answered 304: %v", err)
		}
	}
}

// When a replica dies, the others' shares grow from what remains; when
// the window resets, the share is made again.
func TestTheShareFollowsTheReplicasAndTheWindow(t *testing.T) {
	now := time.Now()
	srv := newRateServer(t, 20, now.Add(time.Hour))
	replicas := 4
	c := shareOver(srv, func() int { return replicas }, 0, func() time.Time { return now })
	calls := 0
	count := func() int {
		n := 0
		for ; n < 100; n++ {
			calls++
			err := send(c, http.MethodGet, srv.URL+fmt.Sprintf("/x?%d", calls))
			if errors.Is(err, ErrBudgetShare) {
				return n
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	if n := count(); n != 1+19/4 {
		t.Errorf("a quarter: %d requests, want %d", n, 1+19/4)
	}
	replicas = 1 // 15 remain, all this replica's now
	if n := count(); n != 15 {
		t.Errorf("alone: %d requests, want the 15 that remain", n)
	}
	srv.mu.Lock()
	srv.remaining, srv.reset = 8, now.Add(2*time.Hour)
	srv.mu.Unlock()
	now = now.Add(time.Hour)
	replicas = 2
	if n := count(); n != 1+7/2 {
		t.Errorf("in the next window: %d requests, want %d", n, 1+7/2)
	}
}

// Writes get 1/n of the hourly write budget.
func TestReplicasSplitTheWriteBudget(t *testing.T) {
	now := time.Now()
	srv := newRateServer(t, 1000, now.Add(time.Hour))
	c := shareOver(srv, func() int { return 2 }, 5, func() time.Time { return now })
	for i := range 2 {
		if err := send(c, http.MethodPost, srv.URL+"/repos/o/r/pulls"); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
	}
	err := send(c, http.MethodPost, srv.URL+"/repos/o/r/pulls")
	if !errors.Is(err, ErrBudgetShare) || !errors.Is(err, ErrWriteBudget) {
		t.Fatalf("the third write of a half of 5: %v", err)
	}
	now = now.Add(time.Hour)
	if err := send(c, http.MethodPost, srv.URL+"/repos/o/r/pulls"); err != nil {
		t.Fatalf("an hour later: %v", err)
	}
}

// ShareBudget puts the share under the provider's calls: a call beyond
// it fails with ErrBudgetShare and is never sent.
func TestProviderSharesTheBudget(t *testing.T) {
	srv := newRateServer(t, 10, time.Now().Add(time.Hour))
	p, err := New("o", "r", "main", Options{BaseURL: srv.URL, Token: "t", WriteSpacing: -1})
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	p.Observe(func(*http.Response, error) { seen++ })
	p.ShareBudget(func() int { return 2 })
	ctx := context.Background()
	for i := range 5 {
		if _, err := p.Find(ctx, fmt.Sprintf("cairn/db/s%d", i)); err != nil {
			t.Fatalf("find %d: %v", i, err)
		}
	}
	if _, err := p.Find(ctx, "cairn/db/s5"); !errors.Is(err, ErrBudgetShare) {
		t.Fatalf("the sixth call of half of 10: %v", err)
	}
	if seen != 5 || srv.remaining != 5 {
		t.Errorf("observed %d calls, %d remain; want 5 and 5", seen, srv.remaining)
	}
}
