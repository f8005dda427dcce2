package publish

import (
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	a := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	b := "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\n"
	got := unifiedDiff(a, b)
	// Hunks closer than twice the context are joined, as diff -u does.
	want := "@@ -1 +1 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n h\n i\n j\n+k\n"
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	far := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	if got := unifiedDiff(far, strings.Replace(strings.Replace(far, "1\n", "one\n", 1), "10\n", "ten\n", 1)); strings.Count(got, "@@ ") != 2 {
		t.Errorf("distant changes make two hunks:\n%s", got)
	}
	if unifiedDiff("same\n", "same\n") != "" {
		t.Error("equal texts have an empty diff")
	}
	if got := unifiedDiff("", "x\n"); got != "@@ -1 +1 @@\n+x\n" {
		t.Errorf("from empty: %q", got)
	}
	huge := strings.Repeat("x\n", 4000)
	if got := unifiedDiff(huge, huge+"y\n"); !strings.Contains(got, "too large") {
		t.Errorf("huge: %q", got)
	}
}
