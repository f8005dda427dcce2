package publish

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/publish/gitrepo"
)

// A step's branch whose head cairn cannot prove its own (see
// publish/gitrepo: the head's parent is not on the base, or its tree is
// not the base's with exactly the cluster's rendered folder replaced by
// what cairn rendered, and no signature of cairn's key) holds a person's
// commit, whatever its author, email or trailers say. cairn pushes
// nothing over it and never merges it. Its open pull request gets a
// failing cairn/plan status and a note in the body saying why, once per
// head; no pull request is opened for such a head. The outcome is
// ActionForeign, not an error: the other clusters go on, and a person
// decides (reset the branch to the base or delete it, and cairn publishes
// the step again).

// The note on a pull request whose head is a person's commit; its marker
// names the head, so the next pass finds it there and writes nothing.
const (
	foreignStart  = "\n<!-- cairn foreign-head -->\n"
	foreignMarker = "<!-- cairn foreign-head head="
)

// foreignHead handles a branch whose head is a person's commit: it sets
// the open pull request's status to failure and notes why in its body,
// unless both are there already. It returns fe, which one turns into
// ActionForeign.
func (p *Publisher) foreignHead(ctx context.Context, pr *PullRequest, fe *gitrepo.ForeignError) (Action, *PullRequest, error) {
	if pr == nil || pr.State != Open {
		return ActionForeign, nil, fe
	}
	head := fe.Head.String()
	check := Check{State: "failure", Description: limit("not cairn's commit, never merged by cairn: " + fe.Why)}
	if pr.Head == head && strings.Contains(pr.Body, foreignMarker+head+" -->") && (pr.Check == Check{} || pr.Check == check) {
		return ActionForeign, nil, fe
	}
	upd := *pr
	upd.Head, upd.Check, upd.Body = head, check, withForeignNote(pr.Body, fe)
	if err := p.PRs.Update(ctx, upd); err != nil {
		return "", nil, fmt.Errorf("mark the person's commit on %s: %w", pr.Branch, err)
	}
	return ActionForeign, nil, fe
}

// withForeignNote is body with the note on a foreign head; a note already
// there is replaced. It stays within MaxBody.
func withForeignNote(body string, fe *gitrepo.ForeignError) string {
	if i := strings.Index(body, foreignStart); i >= 0 {
		body = body[:i]
	}
	note := foreignStart + fmt.Sprintf("**cairn: the head `%s` of this branch is not a commit cairn made** (%s), whatever its author or trailers say. "+
		"cairn does not push over it and never merges it; its `%s` status fails. To have cairn publish the step again, reset the branch to the base or delete it.\n",
		short(fe.Head.String()), within(strings.Join(strings.Fields(fe.Why), " "), 300), CheckContext) + foreignMarker + fe.Head.String() + " -->\n"
	return within(body, MaxBody-len(note)) + note
}

// within keeps s within n characters, cut on a rune boundary.
func within(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// foreignNoted reports whether body carries the note on a foreign head: a
// pull request a person closed with it declined a person's commit, not
// cairn's step.
func foreignNoted(body string) bool { return strings.Contains(body, foreignMarker) }

// foreignNote is the outcome's note for a foreign head.
func foreignNote(fe *gitrepo.ForeignError, pr *PullRequest) string {
	where := "no pull request is opened for it"
	if pr != nil && pr.State == Open {
		where = "its pull request's " + CheckContext + " status fails"
	}
	return fmt.Sprintf("%s holds %s by %s, not cairn's commit (%s): cairn leaves it alone and never merges it; %s; reset the branch to the base or delete it to publish the step again",
		fe.Branch, short(fe.Head.String()), fe.Committer, fe.Why, where)
}
