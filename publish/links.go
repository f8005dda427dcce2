package publish

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
)

// WebLinker is a provider whose repo has a web address (GitHub): the
// bodies link commits and files there.
type WebLinker interface {
	// WebURL is the repo's web address, https://HOST/OWNER/REPO.
	WebURL() string
}

// writeLinks writes what a reviewer may want to open: the spec commit the
// branch is built on and this step's PLAN.md (links when the repo's web
// address is known; else the commit's full hash, which GitHub links
// itself), the previous step's pull request, the next step, and the
// release notes of a version the step moves to.
func writeLinks(b *strings.Builder, in BodyInput) {
	p, s := in.Plan, in.Plan.Steps[in.Current]
	fmt.Fprintf(b, "- **Spec commit:** %s (the base this branch is built on); plan `%s`, observed state `%s`\n",
		commitLink(in.WebURL, in.SpecCommit), p.ID, short(strings.TrimPrefix(p.ObservedFingerprint, "sha256:")))
	planMD := renderer.Root(p.Cluster.Name) + "/PLAN.md"
	switch {
	case in.WebURL != "" && isHash(in.Head):
		fmt.Fprintf(b, "- **Plan:** [`%s`](%s/blob/%s/%s) at this step's commit\n", planMD, in.WebURL, in.Head, planMD)
	default:
		fmt.Fprintf(b, "- **Plan:** `%s` on this branch\n", planMD)
	}
	if pr := in.Previous; pr != nil {
		fmt.Fprintf(b, "- **Previous step:** %s (merged)\n", prRef(*pr))
	}
	if next := in.Current + 1; next < len(p.Steps) {
		fmt.Fprintf(b, "- **Next step:** %d of %d, `%s`: its pull request opens after this one merges\n", next+1, len(p.Steps), p.Steps[next].ID)
	} else {
		b.WriteString("- **Next step:** none, this is the plan's last\n")
	}
	if name, url := releaseNotes(in.Wording, s); url != "" {
		fmt.Fprintf(b, "- **Release notes:** [%s](%s)\n", name, url)
	}
	b.WriteString("\n")
}

// commitLink names a commit as GitHub renders a link to it: a Markdown
// link when the repo's web address is known, else its full hash as plain
// text (GitHub links a hash of the repo itself; a code span it does not).
func commitLink(web, commit string) string {
	switch {
	case !isHash(commit):
		return md(commit)
	case web != "":
		return fmt.Sprintf("[%s](%s/commit/%s)", short(commit), web, commit)
	}
	return commit
}

// prRef names a pull request: #N, which GitHub links, or the local
// provider's branch.
func prRef(pr PullRequest) string {
	step := strings.TrimPrefix(pr.Branch, BranchPrefix+clusterOf(pr.Branch)+"/")
	if pr.Number > 0 {
		return fmt.Sprintf("#%d `%s`", pr.Number, step)
	}
	return fmt.Sprintf("`%s`", strings.ReplaceAll(pr.Branch, "`", "'"))
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

func isHash(s string) bool { return hashRE.MatchString(s) }

// releaseRE is a version a release-notes address may be built from.
var releaseRE = regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,4}){0,2}$`)

// releaseNotes names the release notes of the version a step moves its
// members to, as the kind's wording says. None for a step that changes no
// version, a version that is not plain numbers, or a kind without them.
func releaseNotes(w Wording, s plan.Step) (name, url string) {
	to := ""
	switch pa := s.Params; {
	case pa.UpgradeMember != nil:
		to = pa.UpgradeMember.To
	case pa.PostgresAddReplica != nil:
		to = pa.PostgresAddReplica.Version
	case pa.PostgresMajorUpgrade != nil:
		to = pa.PostgresMajorUpgrade.To
	}
	if !releaseRE.MatchString(to) || w.ReleaseNotes == nil {
		return "", ""
	}
	return w.ReleaseNotes(to)
}

// webURL is the provider's web address of the repo; "" when it has none.
func (p *Publisher) webURL() string {
	if w, ok := p.PRs.(WebLinker); ok {
		return strings.TrimSuffix(w.WebURL(), "/")
	}
	return ""
}

// previous is the merged pull request of the cluster's step merged last
// (the base's entry point selects it); nil when there is none, or the
// step is the plan's next one (merged, waiting for the live state).
func previous(r *gitrepo.Repo, pl plan.Plan, base *object.Commit, prs []PullRequest) *PullRequest {
	e := entryAt(r, base, pl.Cluster.Name)
	if e.Step == "" || len(pl.Steps) > 0 && e.Step == pl.Steps[0].ID {
		return nil
	}
	if pr := existing(prs, Branch(pl.Cluster.Name, e.Step)); pr != nil && pr.State == Merged {
		return pr
	}
	return nil
}
