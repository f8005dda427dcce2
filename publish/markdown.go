package publish

import "strings"

// md makes text from anywhere (names, versions, summaries, policy
// reasons, errors) plain text inside a line of Markdown: each character
// that could start emphasis, a link, a code span, an HTML tag or an
// entity, or end a table cell (a '>' starts a quote only at the start of
// a line, where md's text never is), is escaped with a backslash, and line
// breaks become spaces, so nothing in it can change the body around it.
// An '@' is followed by a zero-width space, as Renovate does, so a name
// like "@team" in a spec notifies nobody; so are "://" and "www.", so no
// text becomes a link GitHub makes of a bare address.
// Text in a code span (step IDs, plan IDs) needs no escaping: IDs are
// validated.
func md(s string) string { return mdEscaper.Replace(oneLine(s)) }

var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", `\<`, "|", `\|`, "~", `\~`, "&", `\&`, "#", `\#`, "@", "@&#8203;",
	"://", ":&#8203;//", "www.", "www&#8203;.",
)
