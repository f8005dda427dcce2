package githubpr

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
)

// Observe sees every request that reaches GitHub, with its answer: a
// rate-limited one too, whose X-RateLimit-Remaining is the budget left.
func TestObserveSeesEveryRequest(t *testing.T) {
	ctx := context.Background()
	f := githubtest.New(t)
	p, _ := newProvider(t, f.URL, f.Token)
	var mu sync.Mutex
	var seen []string
	p.Observe(func(resp *http.Response, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil || resp == nil {
			t.Errorf("no answer: %v", err)
			return
		}
		seen = append(seen, resp.Header.Get("X-RateLimit-Remaining"))
	})
	f.LimitNext, f.LimitKind = 1, "primary"
	if _, err := p.Open(ctx, want("cairn/db/s")); err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, n := range f.Calls {
		calls += n
	}
	if len(seen) != calls || calls < 2 || seen[0] != "0" {
		t.Errorf("seen %d answers %q, GitHub served %d calls %v; want all, the first rate-limited", len(seen), seen, calls, f.Calls)
	}
}
