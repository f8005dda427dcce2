package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/planner/plan"
)

// writeFleetStatus writes one row per cluster.
func writeFleetStatus(w io.Writer, st style, all []clusterStatus) error {
	if len(all) == 0 {
		_, err := io.WriteString(w, "no cluster specs found\n")
		return err
	}
	t := &table{header: []string{"CLUSTER", "KIND", "READY", "VERSION", "PLAN", "NEXT STEP", "PULL REQUEST"}}
	for _, s := range all {
		next, pr := cell{text: "-"}, cell{text: "-"}
		if s.Next != nil {
			next = plain(s.Next.ID)
			pr = prCell(s.Next.PullRequest)
		}
		t.add(plain(s.Name), plain(s.Kind), readyCell(s), plain(dash(strings.Join(s.Versions, ","))), planCell(s.Plan), next, pr)
	}
	return t.write(w, st)
}

// writeClusterStatus writes what status shows of one cluster.
func writeClusterStatus(w io.Writer, st style, s clusterStatus) error {
	var b strings.Builder
	ns := ""
	if s.Namespace != "" {
		ns = " in namespace " + s.Namespace
	}
	pc := planCell(s.Plan)
	fmt.Fprintf(&b, "%s%s  %s  plan %s\n", st.paint(colorBold, s.Kind+"/"+s.Name), ns, st.paint(pc.color, pc.text), dash(s.Plan.ID))
	writeMembers(&b, st, s)
	writeBackup(&b, s)
	b.WriteString("\n")
	writeCurrent(&b, st, s)
	writeNext(&b, st, s)
	for _, g := range s.Plan.Waiting {
		fmt.Fprintf(&b, "waiting for: %s\n", g)
	}
	for _, r := range s.Plan.Refusals {
		fmt.Fprintf(&b, "%s (%s): %s\n", st.paint(colorRed, "refused"), r.Rule, r.Reason)
	}
	for _, n := range s.Plan.Notes {
		fmt.Fprintf(&b, "note (%s): %s\n", n.Field, n.Reason)
	}
	fmt.Fprintf(&b, "pull requests from: %s\n", s.PullRequestsFrom)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMembers(b *strings.Builder, st style, s clusterStatus) {
	if !s.Observed {
		fmt.Fprintf(b, "members: none deployed (the live state holds nothing of it; spec: %d)\n", s.Desired)
		return
	}
	rc := readyCell(s)
	fmt.Fprintf(b, "members: %s ready (spec: %d)\n", st.paint(rc.color, rc.text), s.Desired)
	header := []string{"NAME", "ROLE", "VERSION", "READY", "READY SINCE"}
	lags := slices.ContainsFunc(s.Members, func(m memberStatus) bool { return m.Lag != "" })
	if lags {
		header = append(header, "LAG")
	}
	t := &table{header: header, indent: "  "}
	for _, m := range s.Members {
		ready := cell{"yes", colorGreen}
		if !m.Ready {
			ready = cell{"no", colorRed}
		}
		row := []cell{plain(m.Name), plain(dash(m.Role)), plain(dash(m.Version)), ready, plain(dash(m.ReadySince))}
		if lags {
			row = append(row, plain(dash(m.Lag)))
		}
		t.add(row...)
	}
	_ = t.write(b, st)
}

func writeBackup(b *strings.Builder, s clusterStatus) {
	switch bk := s.Backup; {
	case !s.Observed:
	case bk == nil:
		b.WriteString("backup: none runs\n")
	default:
		tz := ""
		if bk.TimeZone != "" {
			tz = " " + bk.TimeZone
		}
		fmt.Fprintf(b, "backup: %q%s to %s\n", bk.Schedule, tz, bk.StorageLocation)
		switch {
		case bk.LastSuccessful == "":
			b.WriteString("  last complete backup: none yet\n")
		default:
			stale := ""
			if bk.Stale {
				stale = ", stale"
			}
			fmt.Fprintf(b, "  last complete backup: %s (%s ago%s)\n", bk.LastSuccessful, bk.Age, stale)
		}
	}
	if k, ok := kindNamed(s.Kind); ok && s.Observed && k.status.archive != nil {
		b.WriteString(k.status.archive(s.Backup))
	}
}

func writeCurrent(b *strings.Builder, st style, s clusterStatus) {
	c := s.Current
	switch {
	case c == nil && s.Rendered == "base":
		fmt.Fprintf(b, "merged step: none (rendered/%s/ selects the base)\n", s.Name)
		return
	case c == nil:
		fmt.Fprintf(b, "merged step: none (the repo has no rendered/%s/)\n", s.Name)
		return
	}
	fmt.Fprintf(b, "merged step: %s  %s\n", c.ID, c.Summary)
	if c.PullRequest != nil {
		fmt.Fprintf(b, "  pull request: %s\n", prText(c.PullRequest))
	}
	if c.Note != "" {
		fmt.Fprintf(b, "  %s\n", c.Note)
		return
	}
	writeGates(b, st, "gates after it", c.Gates)
}

func writeNext(b *strings.Builder, st style, s clusterStatus) {
	n := s.Next
	if n == nil {
		b.WriteString("next step: none\n")
		return
	}
	fmt.Fprintf(b, "next step: 1 of %d  %s  %s\n", s.Plan.Steps, n.ID, n.Summary)
	if n.Flags != "-" {
		fmt.Fprintf(b, "  flags: %s\n", n.Flags)
	}
	if n.PullRequest != nil {
		fmt.Fprintf(b, "  pull request: %s\n", prText(n.PullRequest))
	} else {
		fmt.Fprintf(b, "  pull request: none yet (cairn propose opens it)\n")
	}
	writeGates(b, st, "gates before it", n.Gates)
	for _, d := range n.Holds {
		fmt.Fprintf(b, "  policy %s: %s %s\n", d.Policy, st.paint(colorYellow, strings.ToLower(string(d.Verdict))), d.Reason)
	}
}

func writeGates(b *strings.Builder, st style, title string, gs []gateStatus) {
	if len(gs) == 0 {
		fmt.Fprintf(b, "  %s: none\n", title)
		return
	}
	pass := 0
	for _, g := range gs {
		if g.Pass {
			pass++
		}
	}
	fmt.Fprintf(b, "  %s: %d of %d hold\n", title, pass, len(gs))
	for _, g := range gs {
		if g.Pass {
			fmt.Fprintf(b, "    %s %s\n", st.paint(colorGreen, "ok"), g.Description)
		} else {
			fmt.Fprintf(b, "    %s %s: %s\n", st.paint(colorYellow, "no"), g.Description, g.Reason)
		}
	}
}

func readyCell(s clusterStatus) cell {
	if !s.Observed {
		return cell{"-", colorDim}
	}
	c := cell{text: strconv.Itoa(s.Ready) + "/" + strconv.Itoa(len(s.Members))}
	switch {
	case s.Ready == len(s.Members) && s.Ready > 0:
		c.color = colorGreen
	case s.Ready == 0:
		c.color = colorRed
	default:
		c.color = colorYellow
	}
	return c
}

func planCell(p planStatus) cell {
	switch p.Status {
	case plan.StatusConverged:
		return cell{"Converged", colorGreen}
	case plan.StatusPlanned:
		return cell{fmt.Sprintf("Planned (%d %s)", p.Steps, plural(p.Steps, "step")), colorYellow}
	case plan.StatusWaiting:
		return cell{"Waiting", colorYellow}
	case plan.StatusRefused:
		return cell{"Refused", colorRed}
	}
	return plain(string(p.Status))
}

func prCell(p *prStatus) cell {
	if p == nil {
		return cell{"none yet", colorDim}
	}
	c := cell{text: string(p.State)}
	if p.Number > 0 {
		c.text = "#" + strconv.Itoa(p.Number) + " " + c.text
	}
	if p.State == "open" {
		c.color = colorGreen
	}
	return c
}

func prText(p *prStatus) string {
	s := p.Branch + " (" + string(p.State) + ")"
	if p.Number > 0 {
		s = fmt.Sprintf("#%d %s", p.Number, s)
	}
	if p.URL != "" {
		s += " " + p.URL
	}
	return s
}

// plural is word for n things.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
