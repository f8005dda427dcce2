package publish

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/planner/plan"
)

// A title keeps its informative ends: the cluster's name, what the step
// does (the summary's head) and what it costs (its last clause); the
// middle goes, on a rune boundary.
func TestTitleKeepsItsEnds(t *testing.T) {
	long := strings.Repeat("a", 48) + "-db1" // the longest valid name
	detail := strings.Repeat("detail ", 40)
	for _, tc := range []struct {
		name, cluster, summary string
		want                   string // the whole title, or "" to check only head and tail
		head, tail             string
	}{
		{"fits whole", "pg", "Switch the primary over from pg-0 to pg-1; writes pause for a few seconds", "cairn: pg: Switch the primary over from pg-0 to pg-1; writes pause for a few seconds", "", ""},
		{"exactly the limit", "pg", strings.Repeat("x", MaxTitle-len("cairn: pg: ")), "cairn: pg: " + strings.Repeat("x", MaxTitle-len("cairn: pg: ")), "", ""},
		{"the last clause kept", long, "Switch the primary over from " + long + "-0 to " + long + "-1 " + detail + "; writes pause for a few seconds", "",
			"cairn: " + long + ": Switch the primary over from " + long + "-0", " … writes pause for a few seconds"},
		{"a last clause too long: its last words", "pg", "Upgrade pg-0 " + detail + "; " + detail + "and then the end", "",
			"cairn: pg: Upgrade pg-0 detail", " and then the end"},
		{"no clauses: the last words", "pg", "Upgrade pg-0 " + detail + "done", "", "cairn: pg: Upgrade pg-0 detail", " done"},
		{"multibyte runes", "pg", strings.Repeat("日本語のテキスト ", 40) + "; 書き込みは止まる", "", "cairn: pg: 日本語のテキスト", " … 書き込みは止まる"},
		{"emoji, no spaces", "pg", strings.Repeat("🚀", 300), "", "cairn: pg: 🚀", "🚀"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Title(plan.Plan{Cluster: plan.ClusterRef{Name: tc.cluster}}, plan.Step{Summary: tc.summary})
			if n := utf8.RuneCountInString(got); n > MaxTitle || !utf8.ValidString(got) {
				t.Fatalf("%d runes, valid UTF-8 %v: %q", n, utf8.ValidString(got), got)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("title %q, want %q", got, tc.want)
			}
			if !strings.HasPrefix(got, tc.head) || !strings.HasSuffix(got, tc.tail) {
				t.Errorf("title %q; want it to begin %q and end %q", got, tc.head, tc.tail)
			}
			if tc.want == "" && !strings.Contains(got, " … ") {
				t.Errorf("a cut title without its ellipsis: %q", got)
			}
		})
	}
}

// Over summaries of every length up to well past the limit, of one-,
// two-, three- and four-byte runes, with and without clauses: the title
// fits, is valid UTF-8, begins with the cluster and, when cut, keeps
// the summary's first word and last rune.
func TestTitleFitsAlways(t *testing.T) {
	for _, unit := range []string{"a ", "ü ", "語 ", "🚀", "ab; ", ";"} {
		for n := 0; n < 700; n += 7 {
			summary := "Step " + strings.Repeat(unit, n) + "end"
			got := Title(plan.Plan{Cluster: plan.ClusterRef{Name: "c"}}, plan.Step{Summary: summary})
			full := "cairn: c: " + summary
			switch {
			case utf8.RuneCountInString(got) > MaxTitle || !utf8.ValidString(got):
				t.Fatalf("unit %q n %d: %d runes: %q", unit, n, utf8.RuneCountInString(got), got)
			case utf8.RuneCountInString(full) <= MaxTitle && got != full:
				t.Fatalf("unit %q n %d: a title that fits was changed: %q", unit, n, got)
			case !strings.HasPrefix(got, "cairn: c: Step") || !strings.HasSuffix(got, "end"):
				t.Fatalf("unit %q n %d: %q", unit, n, got)
			}
		}
	}
}
