package spec

import (
	"fmt"
	"strings"
)

// Quoted is the value as postgresql.conf holds it, in single quotes, so
// that PostgreSQL's lexer (guc-file.l) reads back exactly the value: a
// quote is doubled, and a backslash, which starts an escape inside
// quotes, is doubled too; a control character (validation refuses them)
// is written as an escape, so the value stays on its line. Only a NUL
// would not read back: PostgreSQL ends the value there.
func (v ParamValue) Quoted() string {
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\'':
			b.WriteString("''")
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
