// Package githubpr is the GitHub pull request provider: go-github v60
// behind small interfaces holding only the calls cairn makes.
//
// It is careful with GitHub's limits: reads go through a transport that
// sends conditional requests (If-None-Match) and serves 304 answers from
// its cache, writes are made only when something differs, primary and
// secondary rate limits (403/429 with Retry-After or X-RateLimit-Reset)
// are waited out as told, and every API call is counted. The token is
// sent in the Authorization header only; it is never logged.
package githubpr
