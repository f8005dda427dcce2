package githubtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/publish/gitrepo"
)

// UseRepo puts the bare git repo at path behind the API: pull request
// heads are its branches, and merges make real commits on its base.
func (f *Server) UseRepo(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Git = path
	f.HeadSHA = func(branch string) string {
		repo, err := git.PlainOpen(path)
		if err != nil {
			return ""
		}
		ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
		if err != nil {
			return ""
		}
		return ref.Hash().String()
	}
}

// merge answers PUT /repos/{o}/{r}/pulls/{n}/merge as GitHub does: 409
// when sha is not the head, 405 when a required status check is not
// green on the head ("Required status check "c" is expected." while it is
// missing or pending, "... is failing." once it failed), a required
// review is missing, or the method is not allowed, 422 when the pull request is not open or does
// not merge cleanly, else 200 with the merge commit.
func (f *Server) merge(w http.ResponseWriter, r *http.Request, num string) {
	pr := f.find(w, num)
	if pr == nil {
		return
	}
	var in struct {
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	method := in.MergeMethod
	if method == "" {
		method = "merge"
	}
	f.refresh(pr)
	switch {
	case pr.State != "open":
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Pull Request is not mergeable"})
		return
	case in.SHA != "" && in.SHA != pr.Head.SHA:
		writeJSON(w, http.StatusConflict, map[string]string{"message": "Head branch was modified. Review and try the merge again."})
		return
	case f.MergeMethods != nil && !slices.Contains(f.MergeMethods, method):
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": fmt.Sprintf("%s merges are not allowed on this repository.", method)})
		return
	}
	if msg := f.requiredChecks(pr.Head.SHA); msg != "" {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": msg,
			"documentation_url": "https://docs.github.com/articles/about-protected-branches"})
		return
	}
	if msg := f.requiredReviews(pr); msg != "" {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": msg,
			"documentation_url": "https://docs.github.com/articles/about-protected-branches"})
		return
	}
	sha, err := f.mergeCommit(pr, method, in.CommitTitle)
	if errors.Is(err, gitrepo.ErrNotMergeable) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Pull Request is not mergeable: " + err.Error()})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"message": err.Error()})
		return
	}
	now := time.Now().UTC().Format(time.RFC3339)
	pr.State, pr.Merged, pr.MergedAt = "closed", true, &now
	f.touch(pr)
	if f.DeleteBranchOnMerge && f.Git != "" {
		if repo, err := git.PlainOpen(f.Git); err == nil {
			_ = repo.Storer.RemoveReference(plumbing.NewBranchReferenceName(pr.Head.Ref))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
}

// mergeCommit merges the pull request's head into its base in the git
// repo behind the API; without one it names a commit that is not there.
func (f *Server) mergeCommit(pr *PR, method, title string) (string, error) {
	if f.Git == "" {
		return "merge-of-" + pr.Head.SHA, nil
	}
	repo, err := git.PlainOpen(f.Git)
	if err != nil {
		return "", err
	}
	baseRef, err := repo.Reference(plumbing.NewBranchReferenceName(pr.Base.Ref), true)
	if err != nil {
		return "", err
	}
	base, err := repo.CommitObject(baseRef.Hash())
	if err != nil {
		return "", err
	}
	head, err := repo.CommitObject(plumbing.NewHash(pr.Head.SHA))
	if err != nil {
		return "", err
	}
	// cairn's branches are cairn/<cluster>/<step>; a step changes
	// rendered/<cluster> only.
	cluster, _, _ := strings.Cut(strings.TrimPrefix(pr.Head.Ref, "cairn/"), "/")
	if title == "" {
		title = fmt.Sprintf("Merge pull request #%d from %s", pr.Number, pr.Head.Ref)
	}
	sig := object.Signature{Name: "GitHub", Email: "noreply@github.com"}
	h, err := gitrepo.MergeCommit(repo, base, head, "rendered/"+cluster, title+"\n", sig, method != "merge", nil)
	if err != nil {
		return "", err
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(baseRef.Name(), h)); err != nil {
		return "", err
	}
	return h.String(), nil
}

// noCommits is GitHub's 422 message for a pull request whose head adds
// nothing to its base: the head is the base's head or part of its
// history ("No commits between main and cairn/..."); "" otherwise, or
// without a repo behind the API.
func (f *Server) noCommits(base, head, sha string) string {
	if f.Git == "" || !plumbing.IsHash(sha) {
		return ""
	}
	repo, err := git.PlainOpen(f.Git)
	if err != nil {
		return ""
	}
	baseRef, err := repo.Reference(plumbing.NewBranchReferenceName(base), true)
	if err != nil {
		return ""
	}
	b, err := repo.CommitObject(baseRef.Hash())
	if err != nil {
		return ""
	}
	h, err := repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return ""
	}
	if h.Hash == b.Hash {
		return fmt.Sprintf("No commits between %s and %s", base, head)
	}
	if in, err := h.IsAncestor(b); err == nil && in {
		return fmt.Sprintf("No commits between %s and %s", base, head)
	}
	return ""
}

// requiredReviews is GitHub's 405 message while a pull request has fewer
// approvals than branch protection requires; "" when it has enough.
func (f *Server) requiredReviews(pr *PR) string {
	switch {
	case pr.Approvals >= f.RequiredApprovals:
		return ""
	case f.RequiredApprovals == 1:
		return "At least 1 approving review is required by reviewers with write access."
	}
	return fmt.Sprintf("At least %d approving reviews are required by reviewers with write access.", f.RequiredApprovals)
}

// mergeableState is GitHub's mergeable_state of a pull request: blocked
// while branch protection holds it (a required check not green on the
// head, a required review missing), clean when it can merge, unknown once
// it is closed. (Conflicts, "dirty", are not told apart here: cairn's
// steps change only their own folder.)
func (f *Server) mergeableState(pr *PR) string {
	switch {
	case pr.State != "open":
		return "unknown"
	case f.requiredChecks(pr.Head.SHA) != "" || f.requiredReviews(pr) != "":
		return "blocked"
	}
	return "clean"
}

// Approve has a reviewer approve pull request number, as a review with
// event APPROVE does.
func (f *Server) Approve(number int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.PRs[number-1]
	pr.Approvals++
	f.touch(pr)
}
