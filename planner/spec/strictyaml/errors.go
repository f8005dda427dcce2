package strictyaml

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem in one place of one file.
type Error struct {
	File string
	Line int
	Col  int
	// Path is the field path, for example "spec.backup.schedule". It is
	// empty for problems of the document as a whole.
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, max(e.Col, 1))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is a list of problems, kept in file and position order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Err returns nil for an empty list, so callers can `return errs.Err()`.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	l.Sort()
	return l
}

// Sort orders the list by file, line, column and path.
func (l ErrorList) Sort() {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Path, b.Path),
		)
	})
}

// Quote renders a value from user input for an error message: quoted,
// escaped and cut to a readable length, so hostile input cannot forge
// extra lines in a message.
func Quote(s string) string {
	const maxLen = 40
	r := []rune(s)
	if len(r) > maxLen {
		return fmt.Sprintf("%q...", string(r[:maxLen]))
	}
	return fmt.Sprintf("%q", s)
}
