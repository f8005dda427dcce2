package publish

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/plan"
)

// MaxBody is GitHub's limit on a pull request body, in characters.
const MaxBody = 65536

// Title is a step's pull request title.
func Title(p plan.Plan, s plan.Step) string {
	return fmt.Sprintf("cairn: %s: %s", p.Cluster.Name, s.Summary)
}

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

// StepCheck is the commit status of a step's head: failure if a policy
// denies the step, pending if one holds it, success otherwise.
func StepCheck(p plan.Plan, s plan.Step) Check {
	c := Check{State: "success", Description: fmt.Sprintf("step %s of plan %s is ready for review", s.ID, p.ID)}
	for _, d := range s.Decisions {
		switch {
		case d.Verdict == plan.Deny:
			return Check{State: "failure", Description: limit(fmt.Sprintf("denied by %s: %s", d.Policy, d.Reason))}
		case d.Verdict == plan.Hold && c.State == "success":
			c = Check{State: "pending", Description: limit(fmt.Sprintf("held by %s: %s", d.Policy, d.Reason))}
		}
	}
	return c
}

// limit keeps a status description within GitHub's 140 characters.
func limit(s string) string {
	if r := []rune(s); len(r) > 140 {
		return string(r[:139]) + "…"
	}
	return s
}

// Body is what a reviewer reads: the whole plan with this step marked, a
// diagram, the gates, disruption and rollback, policy decisions, and the
// manifest diff of this step in a collapsed block. It stays under MaxBody
// by cutting the diff, never the rest.
func Body(p plan.Plan, current int, specCommit, diff string) string {
	s := p.Steps[current]
	var b strings.Builder
	fmt.Fprintf(&b, "### %s: step %d of %d\n\n%s\n\n", p.Cluster, current+1, len(p.Steps), s.Summary)
	fmt.Fprintf(&b, "Plan `%s`, planned from spec commit `%s` against observed state `%s`.\n\n", p.ID, short(specCommit), short(strings.TrimPrefix(p.ObservedFingerprint, "sha256:")))
	b.WriteString("| | # | Step | Disruptive | Reversible | Summary |\n|---|---|---|---|---|---|\n")
	for i, st := range p.Steps {
		mark := ""
		if i == current {
			mark = "▶"
		}
		fmt.Fprintf(&b, "| %s | %d | `%s` | %s | %s | %s |\n", mark, i+1, st.ID, yesNo(st.Disruptive), yesNo(st.Reversible), cell(st.Summary))
	}
	b.WriteString("\n```mermaid\nflowchart LR\n")
	for i, st := range p.Steps {
		fmt.Fprintf(&b, "  s%d[\"%d. %s\"]\n", i, i+1, st.ID)
		if i > 0 {
			fmt.Fprintf(&b, "  s%d --> s%d\n", i-1, i)
		}
	}
	fmt.Fprintf(&b, "  style s%d stroke-width:3px\n```\n\n", current)
	writeGates(&b, s)
	fmt.Fprintf(&b, "**Disruptive:** %s. **Reversible:** %s. **Rollback:** %s\n\n", yesNo(s.Disruptive), yesNo(s.Reversible), s.Rollback)
	b.WriteString(autoMergeLine(s))
	for _, d := range s.Decisions {
		fmt.Fprintf(&b, "- Policy `%s`: **%s** %s\n", d.Policy, d.Verdict, d.Reason)
	}
	footer := fmt.Sprintf("\n<!-- cairn cluster=%s step=%s plan=%s -->\n", p.Cluster, s.ID, p.ID)
	// The fence is longer than any run of backticks in the diff, so no
	// manifest line can end the block early.
	fence := strings.Repeat("`", max(3, longestRun(diff, '`')+1))
	head := "<details><summary>Manifests this step changes</summary>\n\n" + fence + "diff\n"
	tail := fence + "\n\n</details>\n"
	room := max(MaxBody-b.Len()-len(head)-len(tail)-len(footer)-200, 0)
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
		return fmt.Sprintf("**Auto-merge:** yes: %s. Add a `%s` label to leave it to a person.\n\n", why, DoNotMerge)
	}
	return fmt.Sprintf("**Auto-merge:** no: %s.\n\n", why)
}

func writeGates(b *strings.Builder, s plan.Step) {
	for _, when := range []plan.Phase{plan.Before, plan.After} {
		title := "Before it starts"
		if when == plan.After {
			title = "Done when"
		}
		first := true
		for _, g := range s.Gates {
			if g.When != when {
				continue
			}
			if first {
				fmt.Fprintf(b, "**%s:**\n", title)
				first = false
			}
			fmt.Fprintf(b, "- [ ] %s\n", g.Description)
		}
		if !first {
			b.WriteString("\n")
		}
	}
}

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

func cell(s string) string { return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s) }

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
