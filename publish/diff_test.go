package publish

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	a := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	b := "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\n"
	got := unifiedDiff(a, b)
	// Hunks closer than twice the context are joined, as diff -u does.
	want := "@@ -1,10 +1,11 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n h\n i\n j\n+k\n"
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	far := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	if got := unifiedDiff(far, strings.Replace(strings.Replace(far, "1\n", "one\n", 1), "10\n", "ten\n", 1)); strings.Count(got, "@@ ") != 2 ||
		!strings.Contains(got, "@@ -1,4 +1,4 @@\n") || !strings.Contains(got, "@@ -7,4 +7,4 @@\n") {
		t.Errorf("distant changes make two hunks:\n%s", got)
	}
	if unifiedDiff("same\n", "same\n") != "" {
		t.Error("equal texts have an empty diff")
	}
	if got := unifiedDiff("", "x\n"); got != "@@ -0,0 +1,1 @@\n+x\n" {
		t.Errorf("from empty: %q", got)
	}
	if got := unifiedDiff("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\n5\n6\n7\n8\nnine\n"); got != "@@ -6,3 +6,4 @@\n 6\n 7\n 8\n+nine\n" {
		t.Errorf("appended: %q", got)
	}
	if got := unifiedDiff("x\n1\n2\n3\n4\n", "1\n2\n3\n4\n"); got != "@@ -1,4 +1,3 @@\n-x\n 1\n 2\n 3\n" {
		t.Errorf("removed at the top: %q", got)
	}
	huge := strings.Repeat("x\n", 4000)
	if got := unifiedDiff(huge, huge+"y\n"); !strings.Contains(got, "too large") {
		t.Errorf("huge: %q", got)
	}
}

const manifestsBefore = `apiVersion: v1
kind: Service
metadata:
  labels:
    name: not-this
  name: e
spec:
  ports:
  - port: 2379
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: "e"
  namespace: db
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: etcd
        image: etcd:3.5.21
`

// Each hunk names the objects its changes belong to, and its header
// counts the lines it shows, so tools and reviewers can apply and read it.
func TestDiffHunksNameTheirObjects(t *testing.T) {
	after := strings.Replace(manifestsBefore, "replicas: 3", "replicas: 4", 1)
	after = strings.Replace(after, "port: 2379", "port: 2380", 1)
	after += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e-config\ndata:\n  a: b\n"
	got := unifiedDiff(manifestsBefore, after)
	for _, want := range []string{"@@ -6,7 +6,7 @@ Service/e\n", "@@ -14,9 +14,16 @@ StatefulSet/e, ConfigMap/e-config\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
	checkHunks(t, manifestsBefore, after, got)
}

var hunkRE = regexp.MustCompile(`^@@ -(\d+),(\d+) \+(\d+),(\d+) @@`)

// checkHunks checks that each hunk's header counts its lines and that the
// lines are where the header says, in both texts.
func checkHunks(t *testing.T, a, b, diff string) {
	t.Helper()
	x, y := splitLines(a), splitLines(b)
	lines := splitLines(diff)
	for i := 0; i < len(lines); {
		m := hunkRE.FindStringSubmatch(lines[i])
		if m == nil {
			t.Fatalf("line %d is no hunk header: %q", i, lines[i])
		}
		as, an, bs, bn := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4])
		ai, bi := max(as-1, 0), max(bs-1, 0)
		if an == 0 {
			ai = as
		}
		if bn == 0 {
			bi = bs
		}
		gotA, gotB := 0, 0
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "@@ "); i++ {
			l := lines[i]
			if l[0] != '+' {
				if x[ai+gotA] != l[1:] {
					t.Fatalf("old line %d is %q, the hunk says %q", ai+gotA+1, x[ai+gotA], l[1:])
				}
				gotA++
			}
			if l[0] != '-' {
				if y[bi+gotB] != l[1:] {
					t.Fatalf("new line %d is %q, the hunk says %q", bi+gotB+1, y[bi+gotB], l[1:])
				}
				gotB++
			}
		}
		if gotA != an || gotB != bn {
			t.Fatalf("hunk %s has %d old and %d new lines", m[0], gotA, gotB)
		}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
