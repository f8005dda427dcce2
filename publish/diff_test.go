package publish

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// obj is a small manifest: apiVersion, kind, namespace (none when ""),
// name and the lines of its spec.
func obj(apiVersion, kind, namespace, name string, spec ...string) string {
	s := "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	s += "spec:\n"
	for _, l := range spec {
		s += "  " + l + "\n"
	}
	return s
}

func stream(docs ...string) string { return strings.Join(docs, "---\n") }

var (
	sts      = obj("apps/v1", "StatefulSet", "db", "e", "replicas: 3", "volumeClaimTemplates:", "- name: data", "  storage: 1Gi")
	sts4     = obj("apps/v1", "StatefulSet", "db", "e", "replicas: 4", "volumeClaimTemplates:", "- name: data", "  storage: 1Gi")
	svc      = obj("v1", "Service", "db", "e", "port: 2379")
	svc2380  = obj("v1", "Service", "db", "e", "port: 2380")
	checkJob = obj("batch/v1", "Job", "db", "e-check", "volumeClaimTemplates:", "- name: data", "  storage: 1Gi", "image: check")
	cmA      = obj("v1", "ConfigMap", "db", "e-a", "a: b")
	cmB      = obj("v1", "ConfigMap", "db", "e-b", "a: b")
	svcOther = obj("v1", "Service", "other", "e", "port: 2379")
	svcV2    = obj("v2", "Service", "db", "e", "port: 2379")
)

// The diff pairs objects by apiVersion, kind, namespace and name, never
// by where their lines fall: each table row says which objects show as
// added (+), removed (-) or changed (~), in order.
func TestUnifiedDiffPairsObjects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before string
		after  string
		want   []string // "+key", "-key", "~key"
	}{
		{"equal", stream(svc, sts), stream(svc, sts), nil},
		{"reordered only", stream(svc, sts), stream(sts, svc), nil},
		{"changed", stream(svc, sts), stream(svc, sts4), []string{"~apps/v1/StatefulSet/db/e"}},
		{"two changed, in the new order", stream(svc, sts), stream(sts4, svc2380), []string{"~apps/v1/StatefulSet/db/e", "~v1/Service/db/e"}},
		{"added", stream(svc), stream(svc, cmA), []string{"+v1/ConfigMap/db/e-a"}},
		{"added from nothing", "", stream(svc), []string{"+v1/Service/db/e"}},
		{"removed", stream(svc, cmA), stream(svc), []string{"-v1/ConfigMap/db/e-a"}},
		{"removed to nothing", stream(svc), "", []string{"-v1/Service/db/e"}},
		// The major-upgrade step: a check Job removed, the StatefulSet
		// changed. The Job's lines look like the StatefulSet's, but the
		// StatefulSet keeps its volumes.
		{"removed beside a changed one", stream(checkJob, sts), stream(sts4), []string{"~apps/v1/StatefulSet/db/e", "-batch/v1/Job/db/e-check"}},
		{"renamed-looking: same spec, another name", stream(cmA), stream(cmB), []string{"+v1/ConfigMap/db/e-b", "-v1/ConfigMap/db/e-a"}},
		{"another namespace is another object", stream(svc), stream(svcOther), []string{"+v1/Service/other/e", "-v1/Service/db/e"}},
		{"another apiVersion is another object", stream(svc), stream(svcV2), []string{"+v2/Service/db/e", "-v1/Service/db/e"}},
		{"unnamed documents, by place", "a: 1\n---\nb: 1\n", "a: 1\n---\nb: 2\n", []string{"~document-2"}},
		{"comment-only documents left out", "# x\n---\n" + svc, svc + "---\n# y\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unifiedDiff(tc.before, tc.after)
			if kinds := diffObjects(t, got); strings.Join(kinds, " ") != strings.Join(tc.want, " ") {
				t.Errorf("objects %v, want %v; diff:\n%s", kinds, tc.want, got)
			}
			checkObjectHunks(t, tc.before, tc.after, got)
		})
	}
}

// diffObjects lists the objects a diff shows: +key added, -key removed,
// ~key changed.
func diffObjects(t *testing.T, diff string) []string {
	t.Helper()
	var out []string
	lines := strings.Split(diff, "\n")
	for i := 0; i+1 < len(lines); i++ {
		from, ok := strings.CutPrefix(lines[i], "--- ")
		if !ok {
			continue
		}
		to, ok := strings.CutPrefix(lines[i+1], "+++ ")
		if !ok {
			t.Fatalf("line %d: %q not followed by +++", i, lines[i])
		}
		switch {
		case from == "/dev/null":
			out = append(out, "+"+strings.TrimPrefix(to, "step/"))
		case to == "/dev/null":
			out = append(out, "-"+strings.TrimPrefix(from, "base/"))
		case strings.TrimPrefix(from, "base/") != strings.TrimPrefix(to, "step/"):
			t.Fatalf("a diff from %s to %s pairs two objects", from, to)
		default:
			out = append(out, "~"+strings.TrimPrefix(from, "base/"))
		}
	}
	return out
}

var hunkRE = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)

// checkObjectHunks checks each object's hunks: the header counts its
// lines, and they are where it says in that object's old and new
// documents.
func checkObjectHunks(t *testing.T, a, b, diff string) {
	t.Helper()
	docs := func(text string) map[string][]string {
		m := map[string][]string{"/dev/null": nil}
		for _, d := range documents(text) {
			m[d.key] = d.lines
		}
		return m
	}
	olds, news := docs(a), docs(b)
	var x, y []string
	lines := strings.SplitAfter(diff, "\n")
	for i := 0; i < len(lines) && lines[i] != ""; {
		if from, ok := strings.CutPrefix(lines[i], "--- "); ok {
			to := strings.TrimPrefix(lines[i+1], "+++ ")
			x, y = olds[strings.TrimPrefix(strings.TrimSpace(from), "base/")], news[strings.TrimPrefix(strings.TrimSpace(to), "step/")]
			i += 2
			continue
		}
		m := hunkRE.FindStringSubmatch(strings.TrimSuffix(lines[i], "\n"))
		if m == nil {
			t.Fatalf("line %d is no hunk header: %q", i, lines[i])
		}
		as, an, bs, bn := atoi(m[1]), count(m[2]), atoi(m[3]), count(m[4])
		ai, bi := max(as-1, 0), max(bs-1, 0)
		if an == 0 {
			ai = as
		}
		if bn == 0 {
			bi = bs
		}
		gotA, gotB := 0, 0
		for i++; i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@ ") && !strings.HasPrefix(lines[i], "--- "); i++ {
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

// count is a hunk header's count: 1 when diff -u leaves it out.
func count(s string) int {
	if s == "" {
		return 1
	}
	return atoi(s)
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// The StatefulSet of the major-upgrade step keeps its volumes in the
// diff: no line of its volumeClaimTemplates is removed.
func TestUnifiedDiffKeepsAChangedObjectsLines(t *testing.T) {
	got := unifiedDiff(stream(checkJob, sts), stream(sts4))
	want := "--- base/apps/v1/StatefulSet/db/e\n+++ step/apps/v1/StatefulSet/db/e\n@@ -4,7 +4,7 @@\n" +
		"   name: e\n   namespace: db\n spec:\n-  replicas: 3\n+  replicas: 4\n   volumeClaimTemplates:\n   - name: data\n     storage: 1Gi\n--- "
	if !strings.HasPrefix(got, want) {
		t.Fatalf("diff:\n%s\nwant it to begin:\n%s", got, want)
	}
	if !strings.Contains(got, "--- base/batch/v1/Job/db/e-check\n+++ /dev/null\n@@ -1,10 +0,0 @@\n-apiVersion: batch/v1\n") {
		t.Errorf("the Job is not shown removed whole:\n%s", got)
	}
}

func TestUnifiedDiffBounds(t *testing.T) {
	huge := obj("v1", "ConfigMap", "", "big", strings.Repeat("x: y\n  ", 4000))
	got := unifiedDiff(huge, huge+"  z: 1\n")
	if !strings.Contains(got, "too large to diff here") || !strings.HasPrefix(got, "--- base/v1/ConfigMap/big\n") {
		t.Errorf("huge: %q", got)
	}
	// One large object does not keep the others from their diffs.
	got = unifiedDiff(stream(huge, svc), stream(huge+"  z: 1\n", svc2380))
	if !strings.Contains(got, "-  port: 2379\n+  port: 2380\n") {
		t.Errorf("the small object's diff is missing:\n%s", got)
	}
}
