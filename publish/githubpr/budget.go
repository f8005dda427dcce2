package githubpr

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ErrBudgetShare: this replica has spent its share of the GitHub budget
// the replicas of a fleet split (ShareBudget); the call is left to a
// later pass.
var ErrBudgetShare = errors.New("this replica's share of the GitHub budget is spent")

// ShareBudget has the provider spend at most its share of the token's
// budgets when replicas() replicas of cairn reconcile spend them (a
// sharded fleet; each asks on every request):
//
//   - of GitHub's primary rate limit, 1/n of what GitHub said remained
//     (X-RateLimit-Remaining) when this replica first heard of the window
//     (X-RateLimit-Reset), until that window resets; when n changes in a
//     window, the share is made again from what remains then. GitHub's
//     answers count every replica's calls, so the shares add up to no
//     more than what was left. A conditional read answered 304 is not
//     counted, as GitHub does not count it.
//   - of the hourly write budget (Options.WritesPerHour), 1/n.
//
// A call beyond the share fails with ErrBudgetShare (and ErrWriteBudget
// for a write) before it is sent, as a write beyond the write budget
// does. Call it after Observe (which then sees only the calls sent) and
// before the provider's first call.
func (p *Provider) ShareBudget(replicas func() int) {
	p.transport.base = &share{next: p.transport.base, replicas: replicas, writesPerHour: p.transport.gate.perHour, now: time.Now}
}

// share is the http.RoundTripper of ShareBudget.
type share struct {
	next          http.RoundTripper
	replicas      func() int
	writesPerHour int // 0: no write budget
	now           func() time.Time

	mu sync.Mutex
	// reset ends the window the allowance is for; zero before an answer
	// named one, or once it has passed.
	reset time.Time
	// remaining is X-RateLimit-Remaining as last heard; n the replicas
	// the allowance was made for; spent the requests made in the window.
	remaining, n, allowance, spent int
	// writes are the writes of the last hour, oldest first.
	writes []time.Time
}

func (s *share) RoundTrip(req *http.Request) (*http.Response, error) {
	write := req.Method != http.MethodGet && req.Method != http.MethodHead
	if err := s.take(write); err != nil {
		return nil, err
	}
	resp, err := s.next.RoundTrip(req)
	s.heard(resp)
	return resp, err
}

// take counts one request against the shares, or refuses it.
func (s *share) take(write bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := max(s.replicas(), 1)
	if !s.reset.IsZero() && !now.Before(s.reset) {
		s.reset = time.Time{} // a new window: its budget comes with the next answer
	}
	if !s.reset.IsZero() {
		if n != s.n {
			s.allowance, s.n = s.spent+s.remaining/n, n
		}
		if s.spent >= s.allowance {
			return fmt.Errorf("%w: %d GitHub requests made since the rate limit window began, this replica's share of %d replicas; more from %s",
				ErrBudgetShare, s.spent, n, s.reset.UTC().Format(time.RFC3339))
		}
	}
	if write && s.writesPerHour > 0 {
		for len(s.writes) > 0 && !s.writes[0].After(now.Add(-time.Hour)) {
			s.writes = s.writes[1:]
		}
		if mine := max(s.writesPerHour/n, 1); len(s.writes) >= mine {
			return fmt.Errorf("%w: %w (%d writes in the last hour, this replica's share of %d among %d replicas; more from %s)",
				ErrBudgetShare, ErrWriteBudget, len(s.writes), s.writesPerHour, n, s.writes[0].Add(time.Hour).UTC().Format(time.RFC3339))
		}
		s.writes = append(s.writes, now)
	}
	s.spent++
	return nil
}

// heard learns the budget from an answer's rate-limit headers.
func (s *share) heard(resp *http.Response) {
	if resp == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if resp.StatusCode == http.StatusNotModified {
		s.spent = max(s.spent-1, 0)
	}
	remaining, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
	if err != nil || remaining < 0 {
		return
	}
	reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil {
		return
	}
	s.remaining = remaining
	if at := time.Unix(reset, 0); !at.Equal(s.reset) {
		// A window this replica had not heard of: remaining counts the
		// requests of every replica in it so far, this one's too.
		n := max(s.replicas(), 1)
		s.reset, s.n, s.spent, s.allowance = at, n, 0, remaining/n
	}
}
