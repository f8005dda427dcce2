package postgres

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// syncQuorum is what a primary's synchronous_standby_names says: a commit
// is acknowledged once K of Names have flushed it (FIRST K: the first K
// connected in list order; ANY K: any K). A zero value (K 0) waits for no
// standby.
type syncQuorum struct {
	K     int
	Names []string
	// Any: the list holds "*", which matches every standby: the set that
	// may acknowledge is not known by name.
	Any bool
}

// parseSyncNames reads synchronous_standby_names as PostgreSQL does
// (syncrep_gram.y): "" waits for none; "a, b" is FIRST 1 (a, b);
// "[FIRST] k (a, b)" and "ANY k (a, b)". Names are identifiers, folded to
// lower case, or double-quoted with "" for a quote; "*" matches any
// standby.
func parseSyncNames(s string) (syncQuorum, error) {
	p := &syncParser{s: s}
	p.space()
	if p.done() {
		return syncQuorum{}, nil
	}
	q := syncQuorum{K: 1}
	first, err := p.token()
	if err != nil {
		return syncQuorum{}, err
	}
	switch {
	case strings.EqualFold(first, "FIRST") || strings.EqualFold(first, "ANY"):
		num, err := p.token()
		if err != nil {
			return syncQuorum{}, err
		}
		if q.K, err = syncCount(num); err != nil {
			return syncQuorum{}, err
		}
		if err := p.names(&q, true); err != nil {
			return syncQuorum{}, err
		}
	case isDigits(first):
		if q.K, err = syncCount(first); err != nil {
			return syncQuorum{}, err
		}
		if err := p.names(&q, true); err != nil {
			return syncQuorum{}, err
		}
	default:
		p.pos = 0
		if err := p.names(&q, false); err != nil {
			return syncQuorum{}, err
		}
	}
	if p.space(); !p.done() {
		return syncQuorum{}, fmt.Errorf("synchronous_standby_names %q: unexpected %q at %d", s, p.s[p.pos:], p.pos)
	}
	return q, nil
}

func syncCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("synchronous_standby_names: %q is not a number of standbys", s)
	}
	return n, nil
}

func isDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

type syncParser struct {
	s   string
	pos int
}

func (p *syncParser) done() bool { return p.pos >= len(p.s) }

func (p *syncParser) space() {
	for !p.done() && unicode.IsSpace(rune(p.s[p.pos])) {
		p.pos++
	}
}

// token is the next name or keyword: quoted, "*", or a run of identifier
// characters (folded to lower case, as PostgreSQL does; keywords are
// compared without case).
func (p *syncParser) token() (string, error) {
	p.space()
	if p.done() {
		return "", fmt.Errorf("synchronous_standby_names %q: ends where a name was expected", p.s)
	}
	switch c := p.s[p.pos]; {
	case c == '"':
		var b strings.Builder
		for p.pos++; ; p.pos++ {
			if p.done() {
				return "", fmt.Errorf("synchronous_standby_names %q: unterminated quoted name", p.s)
			}
			if p.s[p.pos] == '"' {
				if p.pos+1 < len(p.s) && p.s[p.pos+1] == '"' {
					b.WriteByte('"')
					p.pos++
					continue
				}
				p.pos++
				return "\x00" + b.String(), nil // marked quoted: never a keyword
			}
			b.WriteByte(p.s[p.pos])
		}
	case c == '*':
		p.pos++
		return "*", nil
	default:
		start := p.pos
		for !p.done() && (isIdent(p.s[p.pos])) {
			p.pos++
		}
		if p.pos == start {
			return "", fmt.Errorf("synchronous_standby_names %q: unexpected %q at %d", p.s, p.s[p.pos:p.pos+1], p.pos)
		}
		return strings.ToLower(p.s[start:p.pos]), nil
	}
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// names reads a comma-separated list, in parentheses when paren.
func (p *syncParser) names(q *syncQuorum, paren bool) error {
	if paren {
		if p.space(); p.done() || p.s[p.pos] != '(' {
			return fmt.Errorf("synchronous_standby_names %q: \"(\" expected at %d", p.s, p.pos)
		}
		p.pos++
	}
	for {
		name, err := p.token()
		if err != nil {
			return err
		}
		switch {
		case name == "*":
			q.Any = true
		case strings.HasPrefix(name, "\x00"):
			q.Names = append(q.Names, name[1:])
		default:
			q.Names = append(q.Names, name)
		}
		p.space()
		if !p.done() && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		break
	}
	if paren {
		if p.done() || p.s[p.pos] != ')' {
			return fmt.Errorf("synchronous_standby_names %q: \")\" expected at %d", p.s, p.pos)
		}
		p.pos++
	}
	return nil
}
