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

// etcdMinor is one etcd release line cairn can run.
type etcdMinor struct {
	Minor     int // with major 3
	LastPatch int // newest patch release cairn knows an image for
	// UpgradeFloor is the lowest patch of this line from which an upgrade
	// to the next minor is supported; 0 means any.
	UpgradeFloor int
	// Blocked lists patches cairn refuses to run, with the reason.
	Blocked map[int]string
}

// etcdLines are the etcd release lines cairn runs. Keep in step with the
// renderer's image table; add a line when its first release is out.
var etcdLines = []etcdMinor{
	{Minor: 2, LastPatch: 32},
	{Minor: 3, LastPatch: 27},
	{Minor: 4, LastPatch: 37},
	{Minor: 5, LastPatch: 21, UpgradeFloor: 20, Blocked: map[int]string{
		0: "etcd 3.5.0-3.5.2 can lose writes after a crash (etcd advisory of March 2022); use 3.5.3 or newer",
		1: "etcd 3.5.0-3.5.2 can lose writes after a crash (etcd advisory of March 2022); use 3.5.3 or newer",
		2: "etcd 3.5.0-3.5.2 can lose writes after a crash (etcd advisory of March 2022); use 3.5.3 or newer",
	}},
	{Minor: 6, LastPatch: 16},
	{Minor: 7, LastPatch: 3},
}

// postgresMajor is one PostgreSQL major version cairn can run.
type postgresMajor struct {
	Major     int
	LastMinor int
}

var postgresMajors = []postgresMajor{
	{Major: 13, LastMinor: 23},
	{Major: 14, LastMinor: 23},
	{Major: 15, LastMinor: 18},
	{Major: 16, LastMinor: 14},
	{Major: 17, LastMinor: 10},
	{Major: 18, LastMinor: 4},
}

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
		if m.Major == v.Major && v.Minor <= m.LastMinor {
			return v, nil
		}
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
		parts = append(parts, fmt.Sprintf("%d.0-%d.%d", m.Major, m.Major, m.LastMinor))
	}
	return strings.Join(parts, ", ")
}

// EtcdUpgradePath returns the versions an etcd cluster passes through from
// one version to another: one minor at a time, each intermediate line at its
// newest patch, and first the newest patch of the starting line when that
// line requires it before moving on (3.5 needs 3.5.20+ before 3.6). It
// returns nil when from and to are equal, and an error for a downgrade
// across minors or a version cairn cannot run.
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
		line, ok := etcdLine(cur)
		if !ok {
			return nil, fmt.Errorf("etcd %s is not a version cairn can run", cur)
		}
		if line.UpgradeFloor > 0 && cur.Patch < line.UpgradeFloor {
			cur = Version{Major: 3, Minor: cur.Minor, Patch: line.LastPatch}
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
