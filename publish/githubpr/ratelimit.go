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

// retryAfter says how long GitHub asks to wait, if err is a rate limit.
func retryAfter(err error) (time.Duration, bool) {
	var primary *github.RateLimitError
	if errors.As(err, &primary) {
		return max(time.Until(primary.Rate.Reset.Time)+time.Second, time.Second), true
	}
	var secondary *github.AbuseRateLimitError
	if errors.As(err, &secondary) {
		if secondary.RetryAfter != nil {
			return max(*secondary.RetryAfter, time.Second), true
		}
		return time.Minute, true // GitHub's advice without Retry-After
	}
	// GitHub may also answer 429, which go-github does not classify.
	var resp *github.ErrorResponse
	if errors.As(err, &resp) && resp.Response != nil && resp.Response.StatusCode == http.StatusTooManyRequests {
		h := resp.Response.Header
		if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
			return max(time.Duration(s)*time.Second, time.Second), true
		}
		if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Until(time.Unix(reset, 0))+time.Second, time.Second), true
		}
		return time.Minute, true
	}
	return 0, false
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
