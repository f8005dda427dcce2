package publish

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the work of one diff (lines of a times lines of b).
const maxDiffCells = 8_000_000

// unifiedDiff returns a unified diff of two texts with 3 lines of context,
// or a note when they are too large to diff here.
func unifiedDiff(a, b string) string {
	x, y := splitLines(a), splitLines(b)
	if len(x)*len(y) > maxDiffCells {
		return fmt.Sprintf("(%d lines before, %d after: too large to diff here; compare the branch)\n", len(x), len(y))
	}
	ops := lcsOps(x, y)
	var out strings.Builder
	const ctx = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
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
			if run-end > 2*ctx || run == len(ops) {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		fmt.Fprintf(&out, "@@ -%d +%d @@\n", ops[start].ai+1, ops[start].bi+1)
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
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
