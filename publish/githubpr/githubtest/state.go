package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// GitHub's limits on an issue's (a pull request's) title and body, in
// characters.
const (
	maxTitle = 256
	maxBody  = 65536
)

// validText answers 422 as GitHub does for a title or body over its
// limit, and reports whether both are within them.
func validText(w http.ResponseWriter, title, body *string) bool {
	for _, t := range []struct {
		field string
		text  *string
		limit int
	}{{"title", title, maxTitle}, {"body", body, maxBody}} {
		if t.text != nil && utf8.RuneCountInString(*t.text) > t.limit {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
				"errors": []map[string]string{{"resource": "Issue", "code": "custom", "field": t.field,
					"message": fmt.Sprintf("%s is too long (maximum is %d characters)", t.field, t.limit)}},
				"documentation_url": "https://docs.github.com/rest/pulls/pulls"})
			return false
		}
	}
	return true
}

// touch gives a pull request a new updated_at, later than any before.
func (f *Server) touch(pr *PR) {
	t := time.Now().UTC().Truncate(time.Second)
	if !t.After(f.clock) {
		t = f.clock.Add(time.Second)
	}
	f.clock = t
	pr.UpdatedAt = t.Format(time.RFC3339)
}

// refresh brings a pull request up to what its repo holds before it is
// shown: the head an open one's branch points at (a push updates it, as
// on GitHub), the head repo and updated_at tests leave out.
func (f *Server) refresh(pr *PR) {
	if pr.Head.Repo.FullName == "" {
		pr.Head.Repo.FullName = "o/r"
	}
	if f.HeadSHA != nil && pr.State == "open" {
		if sha := f.HeadSHA(pr.Head.Ref); sha != pr.Head.SHA {
			pr.Head.SHA = sha
			f.touch(pr)
			f.pullRef(pr)
		}
	}
	if pr.UpdatedAt == "" {
		f.touch(pr)
	}
}

// pullRef points refs/pull/<n>/head of the repo behind the API at the
// pull request's head, as GitHub keeps it for every pull request (a
// fork's too), so that the base repo can be fetched from at it.
func (f *Server) pullRef(pr *PR) {
	if f.Git == "" || pr.Head.SHA == "" {
		return
	}
	repo, err := git.PlainOpen(f.Git)
	if err != nil {
		return
	}
	name := plumbing.ReferenceName(fmt.Sprintf("refs/pull/%d/head", pr.Number))
	_ = repo.Storer.SetReference(plumbing.NewHashReference(name, plumbing.NewHash(pr.Head.SHA)))
}

// sortPRs sorts as GitHub does: by creation (the default) or by last
// update, descending by default for creation and ascending otherwise.
func sortPRs(prs []*PR, by, direction string) {
	if direction == "" {
		direction = "asc"
		if by == "" || by == "created" {
			direction = "desc"
		}
	}
	slices.SortStableFunc(prs, func(a, b *PR) int {
		if by == "updated" && a.UpdatedAt != b.UpdatedAt {
			return strings.Compare(a.UpdatedAt, b.UpdatedAt)
		}
		return a.Number - b.Number
	})
	if direction == "desc" {
		slices.Reverse(prs)
	}
}

// MaxStatuses is how many statuses GitHub keeps of one commit and
// context: a status more is refused (422).
const MaxStatuses = 1000

// StatusCount is how many statuses of context were written on sha.
func (f *Server) StatusCount(sha, context string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statusCount[[2]string{sha, context}]
}

// status answers POST /repos/{o}/{r}/statuses/{sha}: a commit status on
// any commit of the repo, up to MaxStatuses of a commit and context.
func (f *Server) status(w http.ResponseWriter, r *http.Request, sha string) {
	var in struct{ State, Description, Context string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || !slices.Contains([]string{"error", "failure", "pending", "success"}, in.State) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
		return
	}
	if in.Context == "" {
		in.Context = "default"
	}
	if f.HeadSHA != nil && !f.knownSHA(sha) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "No commit found for SHA: " + sha})
		return
	}
	if f.Statuses == nil {
		f.Statuses, f.contexts = map[string]map[string]string{}, map[string]map[string]string{}
	}
	if f.statusCount == nil {
		f.statusCount = map[[2]string]int{}
	}
	if f.statusCount[[2]string{sha, in.Context}] >= MaxStatuses {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []map[string]string{{"resource": "Status", "code": "custom",
				"message": "This SHA and context has reached the maximum number of statuses."}},
			"documentation_url": "https://docs.github.com/rest/commits/statuses#create-a-commit-status"})
		return
	}
	f.statusCount[[2]string{sha, in.Context}]++
	f.Statuses[sha] = map[string]string{"state": in.State, "context": in.Context, "description": in.Description}
	if f.contexts[sha] == nil {
		f.contexts[sha] = map[string]string{}
	}
	f.contexts[sha][in.Context] = in.State
	writeJSON(w, http.StatusCreated, in)
}

// requiredChecks is GitHub's 405 message when branch protection's
// required status checks do not all pass on sha; "" when they do.
func (f *Server) requiredChecks(sha string) string {
	var expected []string
	for _, c := range f.RequiredContexts {
		switch f.contexts[sha][c] {
		case "success":
		case "failure", "error":
			return fmt.Sprintf("Required status check %q is failing.", c)
		default: // not set, or pending
			expected = append(expected, c)
		}
	}
	switch len(expected) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("Required status check %q is expected.", expected[0])
	}
	return fmt.Sprintf("%d of %d required status checks are expected.", len(expected), len(f.RequiredContexts))
}

// knownSHA reports whether sha is a commit of the repo behind the API, or
// the head of a pull request.
func (f *Server) knownSHA(sha string) bool {
	if f.Git != "" && plumbing.IsHash(sha) {
		if repo, err := git.PlainOpen(f.Git); err == nil {
			if _, err := repo.CommitObject(plumbing.NewHash(sha)); err == nil {
				return true
			}
		}
	}
	for _, pr := range f.PRs {
		if f.HeadSHA(pr.Head.Ref) == sha {
			return true
		}
	}
	return false
}
