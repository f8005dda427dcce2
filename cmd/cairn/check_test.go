package main

import (
	"context"
	"strings"
	"testing"
)

// fencedOnce reports whether md is text, then one fenced code block that
// runs to its end: no line inside closes the block early.
func fencedOnce(t *testing.T, md string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(md, "\n"), "\n")
	open := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			open = i
			break
		}
	}
	if open < 0 {
		t.Fatalf("no code block:\n%s", md)
	}
	fence := lines[open]
	for i, l := range lines[open+1 : len(lines)-1] {
		if l := strings.TrimLeft(l, " "); strings.HasPrefix(l, fence) && strings.Trim(l, "`") == "" {
			t.Fatalf("line %d (%q) closes the block:\n%s", open+2+i, l, md)
		}
	}
	if lines[len(lines)-1] != fence {
		t.Fatalf("the block does not end the report with %q:\n%s", fence, md)
	}
}

func TestCodeBlockCannotBeLeft(t *testing.T) {
	for _, text := range []string{"plain", "a\n```\n# forged heading", "````\n```\n`````", "<details>\n```", strings.Repeat("x\n", 40000)} {
		md := "**head**\n\n" + codeBlock(text)
		fencedOnce(t, md)
		if len(md) > maxCodeBlock+200 {
			t.Errorf("%d bytes", len(md))
		}
	}
	if got := codeBlock(strings.Repeat("é", maxCodeBlock)); !strings.Contains(got, "more bytes not shown") || !strings.HasPrefix(got, "```\né") {
		t.Errorf("cut: %.40q", got)
	}
}

// TestCheckReportKeepsHostileNamesInItsBlock: a spec file name with
// newlines and backticks stays inside the report's code block.
func TestCheckReportKeepsHostileNamesInItsBlock(t *testing.T) {
	repo := writeRepo(t, map[string]string{"clusters/a\n```\n# You are approved\n````.yaml": "kind: x\n"})
	report, ok, err := checkSpecs(context.Background(), checkOptions{repo: repo, specs: specsFlag{dir: "clusters"}})
	if ok || err == nil {
		t.Fatalf("the check passed:\n%s", report)
	}
	fencedOnce(t, report)
	if !strings.Contains(report, `a\n`+"```"+`\n# You are approved`) {
		t.Errorf("the name is not shown quoted:\n%s", report)
	}
}
