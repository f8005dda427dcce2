package publish

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// MaxBody is GitHub's limit on a pull request body, in characters.
const MaxBody = 65536

// MaxTitle is GitHub's limit on a pull request title, in characters: a
// longer one is refused (422).
const MaxTitle = 256

// maxDescription is GitHub's limit on a commit status description.
const maxDescription = 140

// Labels are a step's pull request labels: its kind, and whether it is
// disruptive or irreversible.
func Labels(s plan.Step) []string {
	labels := []string{"cairn", "cairn/" + strings.ToLower(string(s.Kind))}
	if s.Disruptive {
		labels = append(labels, "cairn/disruptive")
	}
	if !s.Reversible {
		labels = append(labels, "cairn/irreversible")
	}
	return labels
}

// GateState is one "before" gate of a step and whether it holds in the
// live state now.
type GateState struct {
	Gate  plan.Gate
	Holds bool
	// Why says what is missing when it does not hold.
	Why string
}

// GateStates checks each "before" gate of a plan's next step with check,
// one gate at a time (the step carrying only that gate). A nil check
// checks nothing: nil.
func GateStates(pl plan.Plan, check func(plan.Plan) (bool, string)) []GateState {
	if check == nil || len(pl.Steps) == 0 {
		return nil
	}
	out := []GateState{}
	for _, g := range pl.Steps[0].Gates {
		if g.When != plan.Before {
			continue
		}
		one := pl
		one.Steps = append([]plan.Step{pl.Steps[0]}, pl.Steps[1:]...)
		one.Steps[0].Gates = []plan.Gate{g}
		holds, why := check(one)
		if holds {
			why = ""
		}
		out = append(out, GateState{Gate: g, Holds: holds, Why: why})
	}
	return out
}

// StepCheck is the commit status of a step's head: failure if a policy
// denies the step; pending while a policy holds it or one of its "before"
// gates does not hold in the live state (gates, from GateStates; nil when
// not checked); success otherwise.
func StepCheck(p plan.Plan, s plan.Step, gates []GateState) Check {
	c := Check{State: "success", Description: fmt.Sprintf("step %s of plan %s is ready for review", s.ID, p.ID)}
	for _, d := range s.Decisions {
		switch {
		case d.Verdict == plan.Deny:
			return Check{State: "failure", Description: limit(fmt.Sprintf("denied by %s: %s", d.Policy, d.Reason))}
		case d.Verdict == plan.Hold && c.State == "success":
			c = Check{State: "pending", Description: limit(fmt.Sprintf("held by %s: %s", d.Policy, d.Reason))}
		}
	}
	for _, g := range gates {
		if !g.Holds && c.State == "success" {
			c = Check{State: "pending", Description: limit(fmt.Sprintf("waits for %s: %s", g.Gate.Description, g.Why))}
		}
	}
	return c
}

// limit keeps a status description within GitHub's 140 characters.
func limit(s string) string { return cut(s, maxDescription) }

// cut keeps s within n characters, cut on a rune boundary and ended with
// an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// bodyReserve is room a body keeps free under MaxBody for what providers
// append (a merge refusal note, cairn's close marker, the outcome).
const bodyReserve = 2048

// BodyInput is what a step's pull request body is made of. Plan,
// Current and SpecCommit are required; the rest is shown when given.
type BodyInput struct {
	Plan plan.Plan
	// Current is the index of the step in Plan.Steps.
	Current int
	// SpecCommit is the base commit the step's branch was built on.
	SpecCommit string
	// Head is the step's commit on its branch: the body links its
	// PLAN.md. Empty: the body names the file only.
	Head string
	// Diff is the step's manifest diff (cut to fit, never the rest).
	Diff string
	// Gates say which "before" gates hold now (GateStates); nil: not
	// checked.
	Gates []GateState
	// Live is the observed cluster the plan was made against: its table
	// is shown only when its fingerprint is the plan's
	// ObservedFingerprint, so the body never shows a state the plan was
	// not made from. nil: none shown.
	Live *live.Cluster
	// WebURL is the repo's web address (https://github.com/OWNER/REPO),
	// from a provider that is a WebLinker: commits and PLAN.md are links.
	// Empty: commits are named by their full hash, which GitHub links.
	WebURL string
	// Previous is the pull request of the cluster's step merged last (the
	// base's entry point selects it); nil when none is known.
	Previous *PullRequest
	// Wording is what the body says that depends on the cluster's kind;
	// the zero Wording says the generic thing.
	Wording Wording
}

// Body is what a reviewer reads: the whole plan with this step marked,
// links (the spec commit, PLAN.md, the neighbouring steps, release
// notes), the live state it was planned against, a diagram, the gates
// (which hold now, when gates were checked), the pods that restart and
// the expected disruption, rollback, policy decisions, and the manifest
// diff of this step in a collapsed block. It stays under MaxBody by
// cutting the diff, never the rest. All text from specs, policies and
// the live state is escaped (md).
func Body(in BodyInput) string {
	p, current := in.Plan, in.Current
	s := p.Steps[current]
	var b strings.Builder
	fmt.Fprintf(&b, "### %s: step %d of %d\n\n%s\n\n", md(p.Cluster.String()), current+1, len(p.Steps), md(s.Summary))
	writeForeignBucket(&b, s)
	writeLinks(&b, in)
	writeLive(&b, p, in.Live)
	b.WriteString("| | # | Step | Disruptive | Reversible | Summary |\n|---|---|---|---|---|---|\n")
	for i, st := range p.Steps {
		mark := ""
		if i == current {
			mark = "▶"
		}
		fmt.Fprintf(&b, "| %s | %d | `%s` | %s | %s | %s |\n", mark, i+1, st.ID, yesNo(st.Disruptive), yesNo(st.Reversible), md(st.Summary))
	}
	b.WriteString("\n```mermaid\nflowchart LR\n")
	for i, st := range p.Steps {
		fmt.Fprintf(&b, "  s%d[\"%d. %s\"]\n", i, i+1, st.ID)
		if i > 0 {
			fmt.Fprintf(&b, "  s%d --> s%d\n", i-1, i)
		}
	}
	fmt.Fprintf(&b, "  style s%d stroke-width:3px\n```\n\n", current)
	writeGates(&b, s, in.Gates)
	roles := verified(p, in.Live)
	if current > 0 {
		roles = nil // earlier steps may move the roles (a switchover)
	}
	writeImpact(&b, in.Wording, p, current, roles)
	fmt.Fprintf(&b, "**Disruptive:** %s. **Reversible:** %s. **Rollback:** %s\n\n", yesNo(s.Disruptive), yesNo(s.Reversible), md(s.Rollback))
	b.WriteString(autoMergeLine(s))
	for _, d := range s.Decisions {
		fmt.Fprintf(&b, "- Policy `%s`: **%s** %s\n", strings.ReplaceAll(oneLine(d.Policy), "`", "'"), d.Verdict, md(d.Reason))
	}
	footer := fmt.Sprintf("\n<!-- cairn cluster=%s step=%s plan=%s %s -->\n", p.Cluster, s.ID, p.ID, outcomePending)
	diff := in.Diff
	// The fence is longer than any run of backticks in the diff, so no
	// manifest line can end the block early.
	fence := strings.Repeat("`", max(3, longestRun(diff, '`')+1))
	head := "<details><summary>Manifests this step changes</summary>\n\n" + fence + "diff\n"
	tail := fence + "\n\n</details>\n"
	room := max(MaxBody-b.Len()-len(head)-len(tail)-len(footer)-bodyReserve, 0)
	if len(diff) > room {
		cut := strings.LastIndexByte(diff[:room], '\n') + 1
		diff = diff[:cut] + fmt.Sprintf("... (diff cut at %d of %d characters; see the branch)\n", cut, len(diff))
	}
	b.WriteString(head + diff + tail + footer)
	return b.String()
}

// autoMergeLine says whether cairn merges the step itself; empty when no
// policy lets it.
func autoMergeLine(s plan.Step) string {
	ok, why := s.AutoMerge()
	switch {
	case why == "":
		return ""
	case ok:
		return fmt.Sprintf("**Auto-merge:** yes: %s. Add a `%s` label to leave it to a person.\n\n", md(why), DoNotMerge)
	}
	return fmt.Sprintf("**Auto-merge:** no: %s.\n\n", md(why))
}

// writeGates lists the step's gates as plain bullets (not a task list: a
// reviewer's tick would be undone by the next update). The "before" gates
// say whether they hold now when gates were checked; the "done when"
// gates show their results once the step is done (outcome.go).
func writeGates(b *strings.Builder, s plan.Step, gates []GateState) {
	first := true
	n := 0 // the place of a "before" gate among gates
	for _, g := range s.Gates {
		if g.When != plan.Before {
			continue
		}
		if first {
			b.WriteString("**Before it starts:**\n")
			first = false
		}
		switch {
		case n >= len(gates):
			fmt.Fprintf(b, "- %s\n", md(g.Description))
		case gates[n].Holds:
			fmt.Fprintf(b, "- ✅ %s (holds now)\n", md(g.Description))
		default:
			fmt.Fprintf(b, "- ⏳ %s (not yet: %s)\n", md(g.Description), md(gates[n].Why))
		}
		n++
	}
	if !first {
		b.WriteString("\n")
	}
	b.WriteString(doneWhen(s, nil, ""))
}

// doneWhen is the step's "Done when" list: plain bullets until the step
// is done, then (results, one per "after" gate, and when they held) each
// with its result. Empty when the step has no "after" gate.
func doneWhen(s plan.Step, results []GateState, held string) string {
	var b strings.Builder
	n := 0
	for _, g := range s.Gates {
		if g.When != plan.After {
			continue
		}
		if n == 0 {
			b.WriteString("**Done when:**\n")
		}
		switch {
		case n >= len(results):
			fmt.Fprintf(&b, "- %s\n", md(g.Description))
		case results[n].Holds:
			fmt.Fprintf(&b, "- ✅ %s (held %s)\n", md(g.Description), held)
		default:
			fmt.Fprintf(&b, "- ❌ %s (%s)\n", md(g.Description), md(results[n].Why))
		}
		n++
	}
	if n > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// The note a provider leaves on a pull request it refused to merge. It
// names the head, and may name what the provider said of the pull
// request's mergeability then (GitHub's mergeable_state: blocked while a
// required check or review is missing): cairn tries again once the
// provider says something else of it, the pull request changes (a new
// head or body), or a person deletes the note.
const (
	refusalStart  = "\n**Auto-merge refused:** "
	refusalMarker = "<!-- cairn merge-refused head="
	refusalState  = " state="
)

// WithMergeRefusal is body with a note that the provider refused to merge
// head, and why; a note already there is replaced.
func WithMergeRefusal(body, head, why string) string { return WithMergeRefusalIn(body, head, "", why) }

// WithMergeRefusalIn is WithMergeRefusal noting the state the provider
// said the pull request was in (letters and underscores; "" when none).
func WithMergeRefusalIn(body, head, state, why string) string {
	if strings.Trim(state, "abcdefghijklmnopqrstuvwxyz_") != "" {
		state = ""
	}
	marker := refusalMarker + head
	if state != "" {
		marker += refusalState + state
	}
	return WithoutMergeRefusal(body) + refusalStart + md(cut(oneLine(why), 400)) +
		". cairn leaves it to a person, and tries again once GitHub says it can merge, the step changes or this note is deleted.\n" +
		marker + " -->\n"
}

// MergeRefused reports whether body carries a merge refusal note for head.
func MergeRefused(body, head string) bool {
	_, ok := MergeRefusal(body, head)
	return ok
}

// MergeRefusal reports whether body carries a merge refusal note for
// head, and the state it noted ("" when none).
func MergeRefusal(body, head string) (state string, ok bool) {
	if head == "" {
		return "", false
	}
	if strings.Contains(body, refusalMarker+head+" -->") {
		return "", true
	}
	i := strings.Index(body, refusalMarker+head+refusalState)
	if i < 0 {
		return "", false
	}
	rest := body[i+len(refusalMarker+head+refusalState):]
	state, _, ok = strings.Cut(rest, " -->")
	if !ok || strings.Trim(state, "abcdefghijklmnopqrstuvwxyz_") != "" {
		return "", false
	}
	return state, true
}

// WithoutMergeRefusal is body without a merge refusal note.
func WithoutMergeRefusal(body string) string {
	i := strings.Index(body, refusalStart)
	if i < 0 {
		return body
	}
	j := strings.Index(body[i:], refusalMarker)
	if j < 0 {
		return body
	}
	end := i + j
	if k := strings.Index(body[end:], "-->\n"); k >= 0 {
		end += k + len("-->\n")
	} else {
		return body
	}
	return body[:i] + body[end:]
}

// The note on an open step's pull request while its cluster's plan
// waits for a change in flight: the plan has no step to render, so the
// body is kept and the note put on top.
const (
	waitingStart = "> **Waiting:** "
	waitingEnd   = " <!-- cairn waiting -->\n\n"
)

// WithWaiting is body with a note on top that the plan waits, and why; a
// note already there is replaced.
func WithWaiting(body, why string) string {
	return waitingStart + md(cut(oneLine(why), 600)) + "; `cairn/plan` is pending until then." + waitingEnd + WithoutWaiting(body)
}

// WithoutWaiting is body without a waiting note.
func WithoutWaiting(body string) string {
	if !strings.HasPrefix(body, waitingStart) {
		return body
	}
	if i := strings.Index(body, waitingEnd); i >= 0 {
		return body[i+len(waitingEnd):]
	}
	return body
}

// markWaiting sets the open pull requests of a waiting plan's cluster
// pending, saying what the plan waits for (a member down, a change in
// flight), in the status and on top of the body; a pull request already
// marked so is not written again. Publishing the plan's next step again
// once it no longer waits writes the body afresh and the status back.
func (p *Publisher) markWaiting(ctx context.Context, pl plan.Plan, prs []PullRequest) error {
	why := note(pl)
	for _, pr := range prs {
		if pr.State != Open || clusterOf(pr.Branch) != pl.Cluster.Name || foreignNoted(pr.Body) {
			continue // a person's head keeps its failing status
		}
		want := pr
		want.Body = WithWaiting(WithoutMergeRefusal(pr.Body), why)
		want.Check = Check{State: "pending", Description: limit(why)}
		if want.Body == pr.Body && (pr.Check == Check{} || pr.Check == want.Check) {
			continue
		}
		if err := p.PRs.Update(ctx, want); err != nil {
			return fmt.Errorf("mark %s waiting: %w", pr.Branch, err)
		}
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// writeForeignBucket warns, on a create step that restores from a bucket
// that is not the cluster's own, that the spec opts in to trusting it.
func writeForeignBucket(b *strings.Builder, s plan.Step) {
	cc := s.Params.CreateCluster
	if cc == nil || cc.RestoreFrom == nil || !cc.RestoreFrom.ForeignBucket {
		return
	}
	fmt.Fprintf(b, "> **Restores from a bucket that is not the cluster's own:** %s, trusted by `spec.restoreFrom.trustForeignBucket: true`. "+
		"The new cluster's data, roles and passwords come from whoever can write there: check who that is before merging.\n\n", md(cc.RestoreFrom.StorageLocation))
}
