package renderer

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/plan"
)

// planMarkdown renders PLAN.md: the steps with the current one marked,
// then each step's gates, disruption, rollback note and policy decisions.
func planMarkdown(p plan.Plan, current string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Plan for %s\n\n", p.Cluster)
	fmt.Fprintf(&b, "Plan `%s`, status **%s**, %d step(s). Planned from spec `%s` against observed state `%s`.\n\n",
		p.ID, p.Status, len(p.Steps), p.SpecFingerprint, p.ObservedFingerprint)
	entry := "`base/` (the cluster as it runs; no step applied)"
	if current != "" {
		entry = fmt.Sprintf("`%s/` (step `%s`)", StepDir(current), current)
	}
	fmt.Fprintf(&b, "The entry point `kustomization.yaml` selects %s.\n\n", entry)
	for _, r := range p.Refusals {
		fmt.Fprintf(&b, "> **Refused** (rule `%s`%s): %s\n\n", r.Rule, fieldNote(r.Field), r.Reason)
	}
	for _, g := range p.Waiting {
		fmt.Fprintf(&b, "> **Waiting**: %s\n\n", g.Description)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "> **Note** (`%s`): %s\n\n", n.Field, n.Reason)
	}
	if len(p.Steps) == 0 {
		return b.Bytes()
	}
	b.WriteString("| | # | Step | Kind | Disruptive | Reversible | Summary |\n|---|---|---|---|---|---|---|\n")
	for i, s := range p.Steps {
		mark := ""
		if s.ID == current {
			mark = "▶"
		}
		fmt.Fprintf(&b, "| %s | %d | `%s` | %s | %s | %s | %s |\n", mark, i+1, s.ID, s.Kind, yesNo(s.Disruptive), yesNo(s.Reversible), cell(s.Summary))
	}
	for i, s := range p.Steps {
		title := fmt.Sprintf("\n## %d. `%s`", i+1, s.ID)
		if s.ID == current {
			title += " (current)"
		}
		fmt.Fprintf(&b, "%s\n\n%s\n\n", title, s.Summary)
		fmt.Fprintf(&b, "- Overlay: `%s/`\n- Disruptive: %s; reversible: %s\n", StepDir(s.ID), yesNo(s.Disruptive), yesNo(s.Reversible))
		writeGates(&b, "Before it starts", s.Gates, plan.Before)
		writeGates(&b, "Done when", s.Gates, plan.After)
		fmt.Fprintf(&b, "- Rollback: %s\n", s.Rollback)
		for _, d := range s.Decisions {
			fmt.Fprintf(&b, "- Policy `%s`: %s%s%s\n", d.Policy, d.Verdict, autoMergeNote(d), reasonNote(d.Reason))
		}
		if ok, why := s.AutoMerge(); why != "" {
			fmt.Fprintf(&b, "- Auto-merge: %s (%s)\n", yesNo(ok), why)
		}
	}
	return b.Bytes()
}

func writeGates(b *bytes.Buffer, title string, gates []plan.Gate, when plan.Phase) {
	var lines []string
	for _, g := range gates {
		if g.When == when {
			lines = append(lines, g.Description)
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(b, "- %s: %s\n", title, strings.Join(lines, "; "))
	}
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func fieldNote(f string) string {
	if f == "" {
		return ""
	}
	return ", field `" + f + "`"
}

func autoMergeNote(d plan.Decision) string {
	if d.AutoMerge {
		return " (auto-merge)"
	}
	return ""
}

func reasonNote(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}
