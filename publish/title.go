package publish

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/planner/plan"
)

// Title is a step's pull request title, "cairn: <cluster>: <summary>",
// at most MaxTitle characters; the body carries the whole summary. A
// summary too long is cut in the middle, on a rune boundary, with an
// ellipsis: the title keeps the cluster's name, the summary's head (what
// the step does) and its last clause, after its last "; " (what it costs:
// "writes pause for a few seconds", "writes stop until it has started"),
// or, without one, its last words.
func Title(p plan.Plan, s plan.Step) string {
	prefix := fmt.Sprintf("cairn: %s: ", p.Cluster.Name)
	return prefix + cutMiddle(s.Summary, MaxTitle-utf8.RuneCountInString(prefix))
}

// cutMiddle cuts s to at most n runes by replacing its middle with "…":
// the last clause (after the last "; ") is kept when it takes at most
// half of n, else the last quarter of n; the head takes the rest, ending
// at a space when one is near. s fits whole when it can.
func cutMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 8 {
		return cut(s, max(n, 1))
	}
	tail := []rune(nil)
	if i := strings.LastIndex(s, "; "); i >= 0 {
		tail = []rune(s[i+len("; "):])
	}
	if len(tail) == 0 || len(tail) > n/2 {
		tail = r[len(r)-n/4:]
		if j := indexRune(tail, ' '); j >= 0 && j < len(tail)/2 {
			tail = tail[j+1:] // start at a word
		}
	}
	room := n - len(tail) - len(" … ")
	head := r[:room]
	if j := lastIndexRune(head, ' '); j >= room-room/4 {
		head = head[:j] // end at a word
	}
	return strings.TrimRight(string(head), " ;,:") + " … " + string(tail)
}

func indexRune(r []rune, c rune) int {
	for i, x := range r {
		if x == c {
			return i
		}
	}
	return -1
}

func lastIndexRune(r []rune, c rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == c {
			return i
		}
	}
	return -1
}
