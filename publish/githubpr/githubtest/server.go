// Package githubtest is a fake GitHub REST API for tests: the calls cairn
// makes, answered the way GitHub does, over a real git repo when one is
// given (merges make real commits in it).
package githubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server answers the REST calls cairn makes the way GitHub does:
// bearer-token auth, 422 for a second open pull request of a head, a
// title over 256 characters or a head its base holds already ("No
// commits between"), lists sorted by created or updated time with
// Link-header pagination, ETags with 304 answers, at most 1,000 statuses
// of a commit and context, required status checks on merge (405), head
// branches deleted on merge when the repo says so, and primary and
// secondary rate limits (with or without Retry-After) on demand, and
// refs/pull/<n>/head in the repo behind it (UseRepo) at each pull
// request's head.
type Server struct {
	// URL is the API's URL (Options.BaseURL of the provider).
	URL   string
	Token string
	mu    sync.Mutex
	PRs   []*PR
	Calls map[string]int // "METHOD path" -> count
	// LimitNext makes the next n calls answer with a rate limit: kind is
	// "secondary" (403 + Retry-After), "primary" (403, remaining 0),
	// "429" (429 + Retry-After), or "secondary-bare" and "429-bare": a
	// secondary limit without Retry-After, whose X-RateLimit-Reset is the
	// primary limit's hourly reset, as GitHub sends on every answer.
	LimitNext int
	LimitKind string
	// FailAt makes the call with this "METHOD path-prefix" fail once with
	// a 502, as a crash between calls would leave things.
	FailAt string
	// Statuses are the commit statuses set, by sha: the last one set.
	Statuses map[string]map[string]string
	// statusCount counts the statuses written, by sha and context.
	statusCount map[[2]string]int
	// contexts are the latest state of each context of a sha, as branch
	// protection reads them.
	contexts map[string]map[string]string
	// clock is the last updated_at given.
	clock time.Time
	// HeadSHA is the commit a branch points at, as GitHub reads it from
	// the repo; nil gives placeholders. UseRepo sets it.
	HeadSHA func(branch string) string
	// Git is the bare repo behind the API (UseRepo); merges are made in it.
	Git string
	// RequiredContexts turns branch protection on: a merge needs a
	// success status of each of these contexts on the head.
	RequiredContexts []string
	// MergeMethods are the merge methods the repo allows; nil allows all.
	MergeMethods []string
	// RequiredApprovals turns required reviews on: a merge needs this
	// many approvals (Approve) of the pull request.
	RequiredApprovals int
	// DeleteBranchOnMerge deletes a pull request's head branch once it
	// is merged, as the repo setting "Automatically delete head branches"
	// does; off, GitHub keeps it.
	DeleteBranchOnMerge bool
}

type PR struct {
	Number int    `json:"number"`
	State  string `json:"state"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	// MergedAt is all the list endpoint says of a merge.
	MergedAt *string `json:"merged_at"`
	Merged   bool    `json:"merged"`
	// UpdatedAt changes with every change to the pull request, a push to
	// its head too (set when a list first shows it).
	UpdatedAt string   `json:"updated_at"`
	Head      Ref      `json:"head"`
	Base      Ref      `json:"base"`
	Labels    []Label  `json:"labels"`
	Comments  []string `json:"-"`
	Created   int      `json:"-"`
	// Approvals counts the reviews that approved it (Approve).
	Approvals int `json:"-"`
	// commentIDs are the IDs of Comments (a comment a test appends by
	// hand gets one when first listed); posted counts the comments ever
	// posted, so an ID is never given twice, a deleted one's neither.
	commentIDs []int64
	posted     int
}

type Ref struct {
	Ref  string   `json:"ref"`
	SHA  string   `json:"sha"`
	Repo RepoName `json:"repo"`
}

type RepoName struct {
	FullName string `json:"full_name"`
}

type Label struct {
	Name string `json:"name"`
}

// New starts a fake GitHub that takes the token "ghs_test", stopped when
// the test ends. It has no secondary rate limit, so it sets
// CAIRN_GITHUB_WRITE_SPACING (githubpr.SpacingEnv) to 0 for the test: the
// providers the test makes do not wait a second between writes.
func New(t testing.TB) *Server {
	t.Setenv("CAIRN_GITHUB_WRITE_SPACING", "0")
	f := &Server{Token: "ghs_test", Calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls[r.Method+" "+r.URL.Path]++
	if r.Header.Get("Authorization") != "Bearer "+f.Token {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	if f.LimitNext > 0 {
		f.LimitNext--
		f.rateLimit(w)
		return
	}
	if f.FailAt != "" && strings.HasPrefix(r.Method+" "+r.URL.Path, f.FailAt) {
		f.FailAt = ""
		writeJSON(w, http.StatusBadGateway, map[string]string{"message": "Server Error"})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // repos o r pulls [n]
	if len(parts) < 4 || parts[0] != "repos" {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	switch {
	case parts[3] == "pulls" && len(parts) == 4 && r.Method == http.MethodGet:
		f.list(w, r)
	case parts[3] == "pulls" && len(parts) == 4 && r.Method == http.MethodPost:
		f.create(w, r, parts[1]+"/"+parts[2])
	case parts[3] == "pulls" && len(parts) == 6 && parts[5] == "merge" && r.Method == http.MethodPut:
		f.merge(w, r, parts[4])
	case parts[3] == "pulls" && len(parts) == 5 && r.Method == http.MethodPatch:
		f.edit(w, r, parts[4])
	case parts[3] == "pulls" && len(parts) == 5 && r.Method == http.MethodGet:
		f.get(w, parts[4])
	case parts[3] == "issues" && len(parts) == 6 && parts[5] == "labels" && r.Method == http.MethodPut:
		f.labels(w, r, parts[4])
	case parts[3] == "issues" && len(parts) == 6 && parts[5] == "comments" && r.Method == http.MethodPost:
		f.comment(w, r, parts[4])
	case parts[3] == "issues" && len(parts) == 6 && parts[5] == "comments" && r.Method == http.MethodGet:
		f.listComments(w, parts[4])
	case parts[3] == "issues" && len(parts) == 6 && parts[4] == "comments" && r.Method == http.MethodPatch:
		f.editComment(w, r, parts[5])
	case parts[3] == "issues" && len(parts) == 6 && parts[4] == "comments" && r.Method == http.MethodDelete:
		f.deleteComment(w, parts[5])
	case parts[3] == "statuses" && len(parts) == 5 && r.Method == http.MethodPost:
		f.status(w, r, parts[4])
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

func (f *Server) rateLimit(w http.ResponseWriter) {
	secondary := map[string]string{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
		"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}
	// GitHub sends the primary limit's headers on every answer.
	w.Header().Set("X-RateLimit-Limit", "5000")
	w.Header().Set("X-RateLimit-Remaining", "4990")
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	switch f.LimitKind {
	case "429":
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"message": "You have exceeded a secondary rate limit."})
	case "429-bare":
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"message": "You have exceeded a secondary rate limit."})
	case "primary":
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "API rate limit exceeded for installation ID 1.",
			"documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"})
	case "secondary-bare":
		writeJSON(w, http.StatusForbidden, secondary)
	default:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusForbidden, secondary)
	}
}

func (f *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var out []*PR
	for _, pr := range f.PRs {
		f.refresh(pr)
		state := q.Get("state")
		if state == "" {
			state = "open"
		}
		if state != "all" && pr.State != state {
			continue
		}
		// head is "owner:branch": a fork's branch of the same name is not it.
		if h := q.Get("head"); h != "" && h != strings.Split(pr.Head.Repo.FullName, "/")[0]+":"+pr.Head.Ref {
			continue
		}
		if b := q.Get("base"); b != "" && pr.Base.Ref != b {
			continue
		}
		out = append(out, pr)
	}
	sortPRs(out, q.Get("sort"), q.Get("direction"))
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	last := max((len(out)+per-1)/per, 1)
	if page < last {
		next := *r.URL
		nq := next.Query()
		nq.Set("page", strconv.Itoa(page+1))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.RequestURI()))
	}
	lo, hi := min((page-1)*per, len(out)), min(page*per, len(out))
	body, _ := json.Marshal(out[lo:hi])
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// create answers POST /repos/{o}/{r}/pulls for repo "o/r": the head is a
// branch of that repo.
func (f *Server) create(w http.ResponseWriter, r *http.Request, repo string) {
	owner, _, _ := strings.Cut(repo, "/")
	var in struct{ Title, Head, Base, Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Title == "" || in.Head == "" || in.Base == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed"})
		return
	}
	if !validText(w, &in.Title, &in.Body) {
		return
	}
	for _, pr := range f.PRs {
		if pr.State == "open" && pr.Head.Ref == in.Head && pr.Base.Ref == in.Base && strings.EqualFold(pr.Head.Repo.FullName, repo) {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
				"errors": []map[string]string{{"resource": "PullRequest", "code": "custom",
					"message": "A pull request already exists for " + owner + ":" + in.Head + "."}}})
			return
		}
	}
	// Without a repo, a placeholder commit name of the head.
	sum := sha256.Sum256([]byte(in.Head))
	sha := hex.EncodeToString(sum[:20])
	if f.HeadSHA != nil {
		if sha = f.HeadSHA(in.Head); sha == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
				"errors": []map[string]string{{"resource": "PullRequest", "field": "head", "code": "invalid"}}})
			return
		}
	}
	if msg := f.noCommits(in.Base, in.Head, sha); msg != "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors":            []map[string]string{{"resource": "PullRequest", "code": "custom", "message": msg}},
			"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"})
		return
	}
	pr := &PR{Number: len(f.PRs) + 1, State: "open", Title: in.Title, Body: in.Body,
		Head: Ref{Ref: in.Head, SHA: sha, Repo: RepoName{FullName: repo}}, Base: Ref{Ref: in.Base}, Labels: []Label{}}
	f.touch(pr)
	f.pullRef(pr)
	f.PRs = append(f.PRs, pr)
	writeJSON(w, http.StatusCreated, pr)
}

func (f *Server) find(w http.ResponseWriter, num string) *PR {
	n, _ := strconv.Atoi(num)
	if n < 1 || n > len(f.PRs) {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return nil
	}
	return f.PRs[n-1]
}

func (f *Server) edit(w http.ResponseWriter, r *http.Request, num string) {
	pr := f.find(w, num)
	if pr == nil {
		return
	}
	var in struct{ Title, Body, State *string }
	_ = json.NewDecoder(r.Body).Decode(&in)
	if !validText(w, in.Title, in.Body) {
		return
	}
	f.touch(pr)
	if in.Title != nil {
		pr.Title = *in.Title
	}
	if in.Body != nil {
		pr.Body = *in.Body
	}
	if in.State != nil {
		pr.State = *in.State
	}
	writeJSON(w, http.StatusOK, pr)
}

// get answers GET /repos/{o}/{r}/pulls/{n}: the pull request, merged_at
// and merged included.
func (f *Server) get(w http.ResponseWriter, num string) {
	if pr := f.find(w, num); pr != nil {
		f.refresh(pr)
		writeJSON(w, http.StatusOK, detail{PR: pr, MergeableState: f.mergeableState(pr)})
	}
}

// detail is a pull request as GET /pulls/{n} shows it: with its
// mergeable_state, which lists leave out.
type detail struct {
	*PR
	MergeableState string `json:"mergeable_state"`
}

func (f *Server) labels(w http.ResponseWriter, r *http.Request, num string) {
	pr := f.find(w, num)
	if pr == nil {
		return
	}
	var names []string
	var wrapped struct{ Labels []string }
	raw := json.RawMessage{}
	_ = json.NewDecoder(r.Body).Decode(&raw)
	if json.Unmarshal(raw, &names) != nil {
		_ = json.Unmarshal(raw, &wrapped)
		names = wrapped.Labels
	}
	// GitHub does not keep the order labels were given in.
	slices.Sort(names)
	f.touch(pr)
	pr.Labels = nil
	for _, n := range names {
		pr.Labels = append(pr.Labels, Label{Name: n})
	}
	writeJSON(w, http.StatusOK, pr.Labels)
}

func (f *Server) comment(w http.ResponseWriter, r *http.Request, num string) {
	pr := f.find(w, num)
	if pr == nil {
		return
	}
	var in struct{ Body string }
	_ = json.NewDecoder(r.Body).Decode(&in)
	f.touch(pr)
	ids := pr.ids()
	pr.Comments = append(pr.Comments, in.Body)
	pr.commentIDs = append(ids, commentID(pr.Number, pr.posted))
	pr.posted++
	writeJSON(w, http.StatusCreated, fakeComment{ID: pr.commentIDs[len(pr.commentIDs)-1], Body: in.Body})
}

// ids are the IDs of the pull request's comments, stable across deletes.
func (pr *PR) ids() []int64 {
	for len(pr.commentIDs) < len(pr.Comments) {
		pr.commentIDs = append(pr.commentIDs, commentID(pr.Number, pr.posted))
		pr.posted++
	}
	return pr.commentIDs[:len(pr.Comments)]
}

// deleteComment answers DELETE /repos/{o}/{r}/issues/comments/{id}: 204,
// or 404 for a comment there is not.
func (f *Server) deleteComment(w http.ResponseWriter, id string) {
	for _, pr := range f.PRs {
		for i, cid := range pr.ids() {
			if strconv.FormatInt(cid, 10) == id {
				pr.Comments = append(pr.Comments[:i], pr.Comments[i+1:]...)
				pr.commentIDs = append(pr.commentIDs[:i], pr.commentIDs[i+1:]...)
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

// fakeComment is an issue comment as GitHub lists it.
type fakeComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

// commentID numbers comments repo-wide, as GitHub does: the pull
// request's number and the comment's place in it.
func commentID(number, i int) int64 { return int64(number)*100000 + int64(i) + 1 }

// listComments answers GET /repos/{o}/{r}/issues/{n}/comments, oldest
// first, in one page (the tests keep few comments).
func (f *Server) listComments(w http.ResponseWriter, num string) {
	pr := f.find(w, num)
	if pr == nil {
		return
	}
	out := []fakeComment{}
	ids := pr.ids()
	for i, body := range pr.Comments {
		out = append(out, fakeComment{ID: ids[i], Body: body})
	}
	writeJSON(w, http.StatusOK, out)
}

// editComment answers PATCH /repos/{o}/{r}/issues/comments/{id}.
func (f *Server) editComment(w http.ResponseWriter, r *http.Request, id string) {
	var in struct{ Body string }
	_ = json.NewDecoder(r.Body).Decode(&in)
	for _, pr := range f.PRs {
		for i, cid := range pr.ids() {
			if strconv.FormatInt(cid, 10) == id {
				pr.Comments[i] = in.Body
				writeJSON(w, http.StatusOK, fakeComment{ID: cid, Body: in.Body})
				return
			}
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Open returns the open pull requests.
func (f *Server) Open() []*PR {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*PR
	for _, pr := range f.PRs {
		if pr.State == "open" {
			out = append(out, pr)
		}
	}
	return out
}
