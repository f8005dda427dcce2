package publish

import (
	"fmt"
	"slices"
	"strings"
)

// maxDiffCells bounds the work of one diff (lines of a times lines of b).
const maxDiffCells = 8_000_000

// diffContext is the lines of context around a change, as diff -u has.
const diffContext = 3

// unifiedDiff returns a unified diff of two multi-document YAML texts
// with 3 lines of context, each hunk headed `@@ -a,b +c,d @@` and the
// objects (kind/name) its changes belong to; or a note when they are too
// large to diff here.
func unifiedDiff(a, b string) string {
	x, y := splitLines(a), splitLines(b)
	if len(x)*len(y) > maxDiffCells {
		return fmt.Sprintf("(%d lines before, %d after: too large to diff here; compare the branch)\n", len(x), len(y))
	}
	ops := lcsOps(x, y)
	objA, objB := objects(x), objects(y)
	var out strings.Builder
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start, end := max(0, i-diffContext), hunkEnd(ops, i)
		h := ops[start:end]
		fmt.Fprintf(&out, "@@ -%s +%s @@%s\n", hunkRange(h, true), hunkRange(h, false), hunkObjects(h, objA, objB))
		for _, o := range h {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

// hunkEnd is the end of the hunk whose first change is ops[i]: changes
// closer than twice the context are joined, as diff -u does.
func hunkEnd(ops []diffOp, i int) int {
	end := i
	for end < len(ops) {
		if ops[end].kind != ' ' {
			end++
			continue
		}
		run := end
		for run < len(ops) && ops[run].kind == ' ' {
			run++
		}
		if run-end > 2*diffContext || run == len(ops) {
			return min(end+diffContext, len(ops))
		}
		end = run
	}
	return end
}

// hunkRange is a hunk's "start,count" in the old (a) or the new text: the
// first line's number, or the line before the hunk when it has none of
// that text's lines (0 at the top), as diff -u writes it.
func hunkRange(h []diffOp, old bool) string {
	skip := byte('+')
	if !old {
		skip = '-'
	}
	first, n := 0, 0
	if old {
		first = h[0].ai
	} else {
		first = h[0].bi
	}
	for _, o := range h {
		if o.kind != skip {
			n++
		}
	}
	if n == 0 {
		return fmt.Sprintf("%d,0", first)
	}
	return fmt.Sprintf("%d,%d", first+1, n)
}

// hunkObjects names the objects a hunk's changes belong to, after a
// space; empty when no change is inside a named object.
func hunkObjects(h []diffOp, objA, objB []string) string {
	var names []string
	for _, o := range h {
		name := ""
		switch o.kind {
		case '-':
			name = objA[o.ai]
		case '+':
			name = objB[o.bi]
		}
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " " + strings.Join(names, ", ")
}

// objects names, for each line of a multi-document YAML text, the object
// its document holds: "Kind/name" from its top-level kind and
// metadata.name, "" when the document has neither.
func objects(lines []string) []string {
	out := make([]string, len(lines))
	for start := 0; start < len(lines); {
		end := start
		for end < len(lines) && (end == start || lines[end] != "---") {
			end++
		}
		name := objectName(lines[start:end])
		for i := start; i < end; i++ {
			out[i] = name
		}
		start = end
	}
	return out
}

func objectName(doc []string) string {
	kind, name, inMeta := "", "", false
	for _, l := range doc {
		switch {
		case strings.HasPrefix(l, "kind:"):
			kind = unquote(strings.TrimSpace(strings.TrimPrefix(l, "kind:")))
		case l == "metadata:":
			inMeta = true
		case inMeta && strings.HasPrefix(l, "  name:"):
			name = unquote(strings.TrimSpace(strings.TrimPrefix(l, "  name:")))
		case l != "" && l[0] != ' ' && l[0] != '#':
			inMeta = false
		}
	}
	switch {
	case kind == "" && name == "":
		return ""
	case name == "":
		return kind
	}
	return kind + "/" + name
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	line   string
	ai, bi int
}

func lcsOps(x, y []string) []diffOp {
	n, m := len(x), len(y)
	// l[i][j] is the LCS length of x[i:] and y[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, diffOp{' ', x[i], i, j})
			i, j = i+1, j+1
		case i < n && (j == m || l[i+1][j] >= l[i][j+1]):
			ops = append(ops, diffOp{'-', x[i], i, j})
			i++
		default:
			ops = append(ops, diffOp{'+', y[j], i, j})
			j++
		}
	}
	return ops
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
