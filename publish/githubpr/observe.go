package githubpr

import "net/http"

// Observe has fn see every request cairn makes to the GitHub API as it
// goes over the wire: its answer, or nil and the error when none came. A
// GET answered 304 Not Modified is seen as GitHub's 304, before cairn
// serves it from its cache; a write the write budget refuses is never
// sent, nor seen. cairn reconcile counts requests and keeps the rate
// budget left (X-RateLimit-Remaining) this way. Call it before the
// provider's first call; fn must be safe for concurrent use.
func (p *Provider) Observe(fn func(*http.Response, error)) {
	p.transport.base = observed{next: p.transport.base, fn: fn}
}

// observed is an http.RoundTripper that shows each exchange to fn.
type observed struct {
	next http.RoundTripper
	fn   func(*http.Response, error)
}

func (o observed) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.next.RoundTrip(req)
	o.fn(resp, err)
	return resp, err
}
