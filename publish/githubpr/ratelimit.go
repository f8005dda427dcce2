package githubpr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/go-github/v60/github"
)

// maxRetries bounds how often one call waits for a rate limit.
const maxRetries = 5

// call runs one API call, waiting out GitHub's primary limit (until
// X-RateLimit-Reset) and secondary limits (Retry-After) as told.
func (p *Provider) call(ctx context.Context, what string, fn func() (*github.Response, error)) error {
	for attempt := 0; ; attempt++ {
		_, err := fn()
		if err == nil {
			return nil
		}
		wait, limited := retryAfter(err)
		if !limited || attempt == maxRetries {
			return fmt.Errorf("github %s: %w", what, err)
		}
		if wait > p.MaxWait {
			return fmt.Errorf("github %s: rate limited for %s, longer than the %s cairn waits: %w", what, wait.Round(time.Second), p.MaxWait, err)
		}
		p.Log.Info("waiting for a GitHub rate limit", "call", what, "wait", wait.String())
		if err := p.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// retryAfter says how long to wait, if err is a rate limit: the primary
// limit until its reset (go-github's RateLimitError, which it also
// returns without a request until then); a secondary limit as the
// transport decided (secondary.go): Retry-After, else the reset when no
// request remains, else a backoff from a minute, doubling while it goes
// on; and a call the transport held back until that wait ends.
func retryAfter(err error) (time.Duration, bool) {
	var held *LimitedError
	if errors.As(err, &held) {
		return held.Wait, true
	}
	var primary *github.RateLimitError
	if errors.As(err, &primary) {
		return max(time.Until(primary.Rate.Reset.Time)+time.Second, time.Second), true
	}
	var secondary *github.AbuseRateLimitError
	if errors.As(err, &secondary) {
		if d, ok := decidedWait(secondary.Response); ok {
			return d, true
		}
		if secondary.RetryAfter != nil {
			return max(*secondary.RetryAfter, time.Second), true
		}
		return minBackoff, true
	}
	// A 429 go-github does not classify.
	var resp *github.ErrorResponse
	if errors.As(err, &resp) && resp.Response != nil && resp.Response.StatusCode == http.StatusTooManyRequests {
		if d, ok := decidedWait(resp.Response); ok {
			return d, true
		}
		return minBackoff, true
	}
	return 0, false
}

// decidedWait is the wait the transport put on a limited answer.
func decidedWait(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	s, err := strconv.Atoi(resp.Header.Get(waitHeader))
	if err != nil || s < 0 {
		return 0, false
	}
	return time.Duration(s) * time.Second, true
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
