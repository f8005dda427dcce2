// Package githubpr is the GitHub pull request provider: go-github v60
// behind small interfaces holding only the calls cairn makes.
//
// It is careful with GitHub's limits: reads go through a transport that
// sends conditional requests (If-None-Match) and serves 304 answers from
// its cache; List reads pull requests newest update first and stops at
// the last list's newest (one conditional read when nothing changed);
// Update writes only the parts that differ from what it last read or
// wrote; writes are spaced a second apart and kept within a budget per
// hour (ErrWriteBudget defers the rest to a later pass); the primary
// rate limit is waited out until its reset, a secondary one (403/429) as
// Retry-After says, else from a minute, doubling while it goes on, with
// nothing sent meanwhile (secondary.go); and every API call is counted. Replicas of a
// sharded loop share one token's budget: ShareBudget holds each to its
// share of what GitHub says remains. The token is
// sent in the Authorization header only; it is never logged.
//
// Auto-merge is one PUT /pulls/{n}/merge carrying the head cairn pushed;
// GitHub's 405, 409 and 422 leave the pull request to a person, noted
// once in its body with GitHub's mergeable_state, and tried again (while
// the step's gates hold) once GitHub says it can merge where it did not:
// a required check turned green, a reviewer approved.
//
// Package githubtest is a fake of the API for tests, over a real git repo.
package githubpr
