package githubpr

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

// fakeGitHub answers the REST calls cairn makes the way GitHub does:
// bearer-token auth, 422 for a second open pull request of a head,
// Link-header pagination, ETags with 304 answers, and primary and
// secondary rate limits on demand.
type fakeGitHub struct {
	t     *testing.T
	token string
	mu    sync.Mutex
	prs   []*fakePR
	calls map[string]int // "METHOD path" -> count
	// limitNext makes the next n calls answer with a rate limit: kind is
	// "secondary" (403 + Retry-After) or "primary" (403, remaining 0).
	limitNext int
	limitKind string
	// failAt makes the call with this "METHOD path-prefix" fail once with
	// a 502, as a crash between calls would leave things.
	failAt string
	// statuses are the commit statuses set, by sha.
	statuses map[string]map[string]string
	// headSHA is the commit a branch points at, as GitHub reads it from
	// the repo; nil gives placeholders.
	headSHA func(branch string) string
}

type fakePR struct {
	Number int    `json:"number"`
	State  string `json:"state"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	// MergedAt is all the list endpoint says of a merge.
	MergedAt *string  `json:"merged_at"`
	Head     fakeRef  `json:"head"`
	Base     fakeRef  `json:"base"`
	Labels   []fakeLb `json:"labels"`
	Comments []string `json:"-"`
	Created  int      `json:"-"`
}

type fakeRef struct {
	Ref  string   `json:"ref"`
	SHA  string   `json:"sha"`
	Repo fakeRepo `json:"repo"`
}

type fakeRepo struct {
	FullName string `json:"full_name"`
}

type fakeLb struct {
	Name string `json:"name"`
}

func newFakeGitHub(t *testing.T) (*fakeGitHub, *httptest.Server) {
	f := &fakeGitHub{t: t, token: "ghs_test", calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[r.Method+" "+r.URL.Path]++
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	if f.limitNext > 0 {
		f.limitNext--
		f.rateLimit(w)
		return
	}
	if f.failAt != "" && strings.HasPrefix(r.Method+" "+r.URL.Path, f.failAt) {
		f.failAt = ""
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
		f.create(w, r, parts[1])
	case parts[3] == "pulls" && len(parts) == 5 && r.Method == http.MethodPatch:
		f.edit(w, r, parts[4])
	case parts[3] == "issues" && len(parts) == 6 && parts[5] == "labels" && r.Method == http.MethodPut:
		f.labels(w, r, parts[4])
	case parts[3] == "issues" && len(parts) == 6 && parts[5] == "comments" && r.Method == http.MethodPost:
		f.comment(w, r, parts[4])
	case parts[3] == "statuses" && len(parts) == 5 && r.Method == http.MethodPost:
		var in struct{ State, Description, Context string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.State == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
			return
		}
		if f.headSHA != nil && !f.knownSHA(parts[4]) {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "No commit found for SHA: " + parts[4]})
			return
		}
		if f.statuses == nil {
			f.statuses = map[string]map[string]string{}
		}
		f.statuses[parts[4]] = map[string]string{"state": in.State, "context": in.Context, "description": in.Description}
		writeJSON(w, http.StatusCreated, in)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

func (f *fakeGitHub) rateLimit(w http.ResponseWriter) {
	if f.limitKind == "429" {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"message": "You have exceeded a secondary rate limit."})
		return
	}
	if f.limitKind == "primary" {
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "API rate limit exceeded for installation ID 1.",
			"documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"})
		return
	}
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusForbidden, map[string]string{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
		"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
}

func (f *fakeGitHub) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var out []*fakePR
	for _, pr := range f.prs {
		if pr.Head.Repo.FullName == "" {
			pr.Head.Repo.FullName = "o/r"
		}
		if f.headSHA != nil && pr.State == "open" {
			pr.Head.SHA = f.headSHA(pr.Head.Ref)
		}
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
	// GitHub lists newest first unless asked otherwise.
	if q.Get("direction") != "asc" {
		slices.Reverse(out)
	}
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

func (f *fakeGitHub) create(w http.ResponseWriter, r *http.Request, owner string) {
	var in struct{ Title, Head, Base, Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Title == "" || in.Head == "" || in.Base == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed"})
		return
	}
	for _, pr := range f.prs {
		if pr.State == "open" && pr.Head.Ref == in.Head && pr.Base.Ref == in.Base && pr.Head.Repo.FullName == owner+"/r" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
				"errors": []map[string]string{{"resource": "PullRequest", "code": "custom",
					"message": "A pull request already exists for " + owner + ":" + in.Head + "."}}})
			return
		}
	}
	sha := "sha-of-" + in.Head
	if f.headSHA != nil {
		if sha = f.headSHA(in.Head); sha == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
				"errors": []map[string]string{{"resource": "PullRequest", "field": "head", "code": "invalid"}}})
			return
		}
	}
	pr := &fakePR{Number: len(f.prs) + 1, State: "open", Title: in.Title, Body: in.Body,
		Head: fakeRef{Ref: in.Head, SHA: sha, Repo: fakeRepo{FullName: owner + "/r"}}, Base: fakeRef{Ref: in.Base}, Labels: []fakeLb{}}
	f.prs = append(f.prs, pr)
	writeJSON(w, http.StatusCreated, pr)
}

func (f *fakeGitHub) find(w http.ResponseWriter, num string) *fakePR {
	n, _ := strconv.Atoi(num)
	if n < 1 || n > len(f.prs) {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return nil
	}
	return f.prs[n-1]
}

func (f *fakeGitHub) edit(w http.ResponseWriter, r *http.Request, num string) {
	pr := f.find(w, num)
	if pr == nil {
		return
	}
	var in struct{ Title, Body, State *string }
	_ = json.NewDecoder(r.Body).Decode(&in)
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

func (f *fakeGitHub) labels(w http.ResponseWriter, r *http.Request, num string) {
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
	pr.Labels = nil
	for _, n := range names {
		pr.Labels = append(pr.Labels, fakeLb{Name: n})
	}
	writeJSON(w, http.StatusOK, pr.Labels)
}

func (f *fakeGitHub) comment(w http.ResponseWriter, r *http.Request, num string) {
	pr := f.find(w, num)
	if pr == nil {
		return
	}
	var in struct{ Body string }
	_ = json.NewDecoder(r.Body).Decode(&in)
	pr.Comments = append(pr.Comments, in.Body)
	writeJSON(w, http.StatusCreated, map[string]any{"id": len(pr.Comments), "body": in.Body})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeGitHub) open() []*fakePR {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakePR
	for _, pr := range f.prs {
		if pr.State == "open" {
			out = append(out, pr)
		}
	}
	return out
}

func (f *fakeGitHub) knownSHA(sha string) bool {
	for _, pr := range f.prs {
		if f.headSHA(pr.Head.Ref) == sha {
			return true
		}
	}
	return false
}
