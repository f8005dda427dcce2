package spec

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// checkIdentifiers checks a comma-separated list of identifiers as
// PostgreSQL's SplitIdentifierString parses it (search_path,
// temp_tablespaces, log_destination): names plain or in double quotes
// (a quote doubled inside), separated by commas and spaces. With allowed,
// each name must be one of them, case-insensitively.
func checkIdentifiers(v string, allowed []string) string {
	bad := func(why string) string {
		return fmt.Sprintf("must be a comma-separated list of names; %s %s", strictyaml.Quote(v), why)
	}
	rest := strings.TrimLeft(v, " ")
	if rest == "" {
		return ""
	}
	for {
		var name string
		if strings.HasPrefix(rest, `"`) {
			end := closingQuote(rest)
			if end < 0 {
				return bad("has an unclosed double quote")
			}
			name, rest = strings.ReplaceAll(rest[1:end], `""`, `"`), rest[end+1:]
			if name == "" {
				return bad("has an empty quoted name")
			}
		} else {
			end := strings.IndexAny(rest, ", ")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return bad("has an empty name")
			}
			name, rest = rest[:end], rest[end:]
		}
		if allowed != nil && !slicesContainFold(allowed, name) {
			return fmt.Sprintf("must list names of %s, got %s", strings.Join(allowed, ", "), strictyaml.Quote(name))
		}
		rest = strings.TrimLeft(rest, " ")
		switch {
		case rest == "":
			return ""
		case rest[0] == ',':
			rest = strings.TrimLeft(rest[1:], " ")
		default:
			return bad("is not separated by commas")
		}
	}
}

// closingQuote returns the index of the double quote closing the quoted
// name s starts with, past doubled quotes, or -1.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '"' {
			i++
			continue
		}
		return i
	}
	return -1
}
