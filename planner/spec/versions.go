package spec

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// Version is a parsed release number. PostgreSQL versions use Major and
// Minor ("14.5"); etcd versions use all three ("3.2.13").
type Version struct {
	Major, Minor, Patch int
	// twoPart marks PostgreSQL-style versions, printed as "major.minor".
	twoPart bool
}

// Compare orders versions.
func (v Version) Compare(o Version) int {
	return cmp.Or(cmp.Compare(v.Major, o.Major), cmp.Compare(v.Minor, o.Minor), cmp.Compare(v.Patch, o.Patch))
}

// SameMinor reports whether v and o are on the same etcd minor line.
func (v Version) SameMinor(o Version) bool { return v.Major == o.Major && v.Minor == o.Minor }

// ParseEtcdVersion parses and checks an etcd version such as "3.5.21".
func ParseEtcdVersion(s string) (Version, error) {
	parts, err := parseNumbers(s, 3, `"3.5.21"`)
	if err != nil {
		return Version{}, err
	}
	v := Version{Major: parts[0], Minor: parts[1], Patch: parts[2]}
	line, ok := etcdLine(v)
	if !ok || v.Patch > line.LastPatch {
		return v, fmt.Errorf("etcd %s is not a version cairn can run; supported: %s", s, EtcdSupported())
	}
	if why, bad := line.Blocked[v.Patch]; bad {
		return v, errors.New(why)
	}
	return v, nil
}

// ParseRelease parses a version of parts (2 or 3) numbers without
// checking that cairn can run it, for versions observed in a live cluster.
func ParseRelease(s string, parts int) (Version, error) {
	n, err := parseNumbers(s, parts, map[int]string{2: `"14.5"`, 3: `"3.5.21"`}[parts])
	if err != nil {
		return Version{}, err
	}
	if parts == 2 {
		return Version{Major: n[0], Minor: n[1], twoPart: true}, nil
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, nil
}

// ParsePostgresVersion parses and checks a PostgreSQL version such as "14.5".
func ParsePostgresVersion(s string) (Version, error) {
	parts, err := parseNumbers(s, 2, `"14.5"`)
	if err != nil {
		return Version{}, err
	}
	v := Version{Major: parts[0], Minor: parts[1], twoPart: true}
	for _, m := range postgresMajors {
		if m.Major != v.Major || v.Minor > m.LastMinor {
			continue
		}
		if why, bad := m.Blocked[v.Minor]; bad {
			return v, errors.New(why)
		}
		return v, nil
	}
	return v, fmt.Errorf("PostgreSQL %s is not a version cairn can run; supported: %s", s, PostgresSupported())
}

func parseNumbers(s string, n int, example string) ([]int, error) {
	fields := strings.Split(s, ".")
	if len(fields) != n {
		return nil, fmt.Errorf("version %s must have %d dot-separated numbers, for example %s", strictyaml.Quote(s), n, example)
	}
	out := make([]int, n)
	for i, f := range fields {
		x, err := strconv.Atoi(f)
		if err != nil || x < 0 || x > 999 || (len(f) > 1 && f[0] == '0') {
			return nil, fmt.Errorf("version %s must have %d dot-separated numbers, for example %s", strictyaml.Quote(s), n, example)
		}
		out[i] = x
	}
	return out, nil
}

func etcdLine(v Version) (etcdMinor, bool) {
	if v.Major != 3 {
		return etcdMinor{}, false
	}
	for _, l := range etcdLines {
		if l.Minor == v.Minor {
			return l, true
		}
	}
	return etcdMinor{}, false
}

// EtcdLineSupported reports whether cairn runs v's minor line, whatever
// its patch: a cluster on a blocked or newer patch can still be moved to a
// version cairn runs.
func EtcdLineSupported(v Version) bool {
	_, ok := etcdLine(v)
	return ok
}

// EtcdSupported describes the etcd versions cairn runs, for messages.
func EtcdSupported() string {
	var parts []string
	for _, l := range etcdLines {
		parts = append(parts, fmt.Sprintf("3.%d.0-3.%d.%d", l.Minor, l.Minor, l.LastPatch))
	}
	return strings.Join(parts, ", ")
}

// PostgresSupported describes the PostgreSQL versions cairn runs.
func PostgresSupported() string {
	var parts []string
	for _, m := range postgresMajors {
		p := fmt.Sprintf("%d.0-%d.%d", m.Major, m.Major, m.LastMinor)
		var except []string
		for _, minor := range sortedIntKeys(m.Blocked) {
			except = append(except, fmt.Sprintf("%d.%d", m.Major, minor))
		}
		if len(except) > 0 {
			p += " except " + strings.Join(except, ", ")
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// EtcdFloor is what etcd requires of the members of one line before they
// move to the next minor.
type EtcdFloor struct {
	Floor  Version // the lowest patch the move is supported from
	Newest Version // the line's newest patch cairn knows: where to go first
	Source string  // the page that sets the floor, and what it says
}

// EtcdUpgradeFloor returns the floor of v's line for the move to the next
// minor, and false when the line has none (any patch may move on).
func EtcdUpgradeFloor(v Version) (EtcdFloor, bool) {
	line, ok := etcdLine(v)
	if !ok || line.UpgradeFloor == 0 {
		return EtcdFloor{}, false
	}
	return EtcdFloor{
		Floor:  Version{Major: 3, Minor: line.Minor, Patch: line.UpgradeFloor},
		Newest: Version{Major: 3, Minor: line.Minor, Patch: line.LastPatch},
		Source: line.Floor.String(),
	}, true
}

// EtcdUpgradePath returns the versions an etcd cluster passes through from
// one version to another: one minor at a time, each intermediate line at its
// newest patch, and first the newest patch of the starting line when the
// cluster is below that line's upgrade floor (etcdLines: 3.5.32 before 3.6,
// 3.6.11 before 3.7). It returns nil when from and to are equal, and an
// error for a downgrade across minors or a version cairn cannot run.
func EtcdUpgradePath(from, to Version) ([]Version, error) {
	if from == to {
		return nil, nil
	}
	if to.Major != from.Major || to.Minor < from.Minor {
		return nil, fmt.Errorf("etcd cannot move from %s to %s: downgrades across minor versions are not supported", from, to)
	}
	if from.SameMinor(to) {
		return []Version{to}, nil // patch change, up or down, in one hop
	}
	var path []Version
	cur := from
	for cur.Minor < to.Minor {
		if !EtcdLineSupported(cur) {
			return nil, fmt.Errorf("etcd %s is not a version cairn can run", cur)
		}
		if f, ok := EtcdUpgradeFloor(cur); ok && cur.Compare(f.Floor) < 0 {
			cur = f.Newest
			path = append(path, cur)
		}
		next := Version{Major: 3, Minor: cur.Minor + 1}
		nextLine, ok := etcdLine(next)
		if !ok {
			return nil, fmt.Errorf("etcd has no supported 3.%d line between %s and %s", next.Minor, from, to)
		}
		if next.Minor == to.Minor {
			next = to
		} else {
			next.Patch = nextLine.LastPatch
		}
		path = append(path, next)
		cur = next
	}
	return path, nil
}

func (v Version) String() string {
	if v.twoPart {
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}
