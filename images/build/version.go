package main

import "strings"

// compareVersions orders two Debian versions ([epoch:]upstream[-revision])
// as dpkg does: <0, 0 or >0.
func compareVersions(a, b string) int {
	ea, ua, ra := splitVersion(a)
	eb, ub, rb := splitVersion(b)
	if c := compareNumbers(ea, eb); c != 0 {
		return c
	}
	if c := compareParts(ua, ub); c != 0 {
		return c
	}
	return compareParts(ra, rb)
}

func splitVersion(v string) (epoch, upstream, revision string) {
	if e, rest, ok := strings.Cut(v, ":"); ok {
		epoch, v = e, rest
	}
	if i := strings.LastIndex(v, "-"); i >= 0 {
		return epoch, v[:i], v[i+1:]
	}
	return epoch, v, ""
}

// compareParts is dpkg's verrevcmp: runs of non-digits compared by
// order, then runs of digits compared as numbers, in turn.
func compareParts(a, b string) int {
	for a != "" || b != "" {
		for (a != "" && !isDigit(a[0])) || (b != "" && !isDigit(b[0])) {
			ca, cb := order(a), order(b)
			if ca != cb {
				return ca - cb
			}
			a, b = a[1:], b[1:]
		}
		da, db := leadingDigits(a), leadingDigits(b)
		if c := compareNumbers(da, db); c != 0 {
			return c
		}
		a, b = a[len(da):], b[len(db):]
	}
	return 0
}

// order is the weight of s's first character: '~' sorts before
// everything, even the end of the string; letters before other marks.
func order(s string) int {
	switch {
	case s == "" || isDigit(s[0]):
		return 0
	case s[0] == '~':
		return -1
	case s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z':
		return int(s[0])
	default:
		return int(s[0]) + 256
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i]
}

// compareNumbers compares runs of digits of any length as numbers.
func compareNumbers(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}
