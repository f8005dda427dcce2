package spec

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The expectations below are read from the table, so raising a floor or a
// newest patch is a change of one row, not of these tests.

func lineOf(t *testing.T, minor int) etcdMinor {
	t.Helper()
	l, ok := etcdLine(Version{Major: 3, Minor: minor})
	if !ok {
		t.Fatalf("no etcd 3.%d line in the table", minor)
	}
	return l
}

func etcdV(minor, patch int) Version { return Version{Major: 3, Minor: minor, Patch: patch} }

func checkSource(t *testing.T, what string, s source, mentions string) {
	t.Helper()
	if !strings.HasPrefix(s.URL, "https://") || strings.ContainsAny(s.URL, " \n") {
		t.Errorf("%s: source URL %q is not a page", what, s.URL)
	}
	if !strings.Contains(s.Says, mentions) {
		t.Errorf("%s: source says %q, which does not mention %s", what, s.Says, mentions)
	}
}

func TestEtcdTableRows(t *testing.T) {
	for i, l := range etcdLines {
		name := fmt.Sprintf("3.%d", l.Minor)
		t.Run(name, func(t *testing.T) {
			if i > 0 && l.Minor != etcdLines[i-1].Minor+1 {
				t.Fatalf("line 3.%d follows 3.%d: upgrades move one minor at a time, so lines are one minor apart", l.Minor, etcdLines[i-1].Minor)
			}
			newest := etcdV(l.Minor, l.LastPatch)
			checkSource(t, "newest patch", l.Newest, newest.String())
			if _, bad := l.Blocked[l.LastPatch]; bad {
				t.Errorf("the newest patch %s is blocked: upgrades move through it", newest)
			}
			for p := range l.Blocked {
				if p > l.LastPatch {
					t.Errorf("blocked patch 3.%d.%d is beyond the newest %s", l.Minor, p, newest)
				}
			}
			if i == len(etcdLines)-1 {
				if l.UpgradeFloor != 0 || l.Floor != (source{}) {
					t.Errorf("the newest line has no next minor, so no floor; got %d from %v", l.UpgradeFloor, l.Floor)
				}
				return
			}
			// Every line with a next minor says where its floor, or the
			// absence of one, comes from.
			next := fmt.Sprintf("3.%d", l.Minor+1)
			checkSource(t, "floor", l.Floor, next)
			if l.UpgradeFloor == 0 {
				return
			}
			floor := etcdV(l.Minor, l.UpgradeFloor)
			checkSource(t, "floor", l.Floor, floor.String())
			if l.UpgradeFloor > l.LastPatch {
				t.Errorf("floor %s is above the newest patch cairn knows, %s", floor, newest)
			}
			if _, bad := l.Blocked[l.UpgradeFloor]; bad {
				t.Errorf("floor %s is blocked", floor)
			}
		})
	}
}

func TestEtcdUpgradeFloors(t *testing.T) {
	l5, l6 := lineOf(t, 5), lineOf(t, 6)
	tests := []struct {
		from       Version
		floor      Version
		ok         bool
		sourceSays string
	}{
		{etcdV(5, 0), etcdV(5, l5.UpgradeFloor), true, l5.Floor.URL},
		{etcdV(5, l5.LastPatch), etcdV(5, l5.UpgradeFloor), true, l5.Floor.Says},
		{etcdV(6, 1), etcdV(6, l6.UpgradeFloor), true, l6.Floor.URL},
		{etcdV(4, 0), Version{}, false, ""},
		{etcdV(7, 0), Version{}, false, ""},
		{etcdV(1, 0), Version{}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.from.String(), func(t *testing.T) {
			f, ok := EtcdUpgradeFloor(tc.from)
			if ok != tc.ok || f.Floor != tc.floor {
				t.Fatalf("floor = %v, %v; want %v, %v", f.Floor, ok, tc.floor, tc.ok)
			}
			if !ok {
				return
			}
			if l := lineOf(t, tc.from.Minor); f.Newest != etcdV(l.Minor, l.LastPatch) {
				t.Errorf("newest = %v, want 3.%d.%d", f.Newest, l.Minor, l.LastPatch)
			}
			if !strings.Contains(f.Source, tc.sourceSays) {
				t.Errorf("source %q does not name %q", f.Source, tc.sourceSays)
			}
		})
	}
}

func TestEtcdUpgradePaths(t *testing.T) {
	l4, l5, l6, l7 := lineOf(t, 4), lineOf(t, 5), lineOf(t, 6), lineOf(t, 7)
	newest := func(l etcdMinor) Version { return etcdV(l.Minor, l.LastPatch) }
	floor := func(l etcdMinor) Version { return etcdV(l.Minor, l.UpgradeFloor) }
	below := func(l etcdMinor) Version { return etcdV(l.Minor, l.UpgradeFloor-1) }
	tests := []struct {
		name     string
		from, to Version
		want     []Version
	}{
		{"3.4 to 3.7: the newest patch of each intermediate line", etcdV(4, 20), newest(l7),
			[]Version{newest(l5), newest(l6), newest(l7)}},
		{"3.4 at its newest to 3.7.0", newest(l4), etcdV(7, 0),
			[]Version{newest(l5), newest(l6), etcdV(7, 0)}},
		{"3.3 to 3.7: 3.4 has no floor, 3.5 and 3.6 pass at their newest", etcdV(3, 27), newest(l7),
			[]Version{newest(l4), newest(l5), newest(l6), newest(l7)}},
		{"just below the 3.5 floor: the newest 3.5 first", below(l5), newest(l6),
			[]Version{newest(l5), newest(l6)}},
		{"far below the 3.5 floor: the newest 3.5 first", etcdV(5, 10), etcdV(6, 0),
			[]Version{newest(l5), etcdV(6, 0)}},
		{"below the 3.5 floor to 3.7: the newest 3.5, then the newest 3.6", etcdV(5, 10), newest(l7),
			[]Version{newest(l5), newest(l6), newest(l7)}},
		{"a blocked 3.5 patch below the floor", etcdV(5, 1), newest(l6),
			[]Version{newest(l5), newest(l6)}},
		{"at the 3.5 floor: straight to 3.6", floor(l5), newest(l6), []Version{newest(l6)}},
		{"above the 3.5 floor: straight to 3.6", newest(l5), etcdV(6, 0), []Version{etcdV(6, 0)}},
		{"a 3.5 patch newer than cairn knows: straight to 3.6", etcdV(5, l5.LastPatch+1), newest(l6), []Version{newest(l6)}},
		{"below the 3.6 floor: the newest 3.6 first", below(l6), newest(l7), []Version{newest(l6), newest(l7)}},
		{"at the 3.6 floor: straight to 3.7", floor(l6), etcdV(7, 0), []Version{etcdV(7, 0)}},
		{"3.4 has no floor: any patch moves on", etcdV(4, 0), etcdV(5, 3), []Version{etcdV(5, 3)}},
		{"a patch change below the floor is one hop", etcdV(5, 10), etcdV(5, 21), []Version{etcdV(5, 21)}},
		{"a patch downgrade is one hop", newest(l5), etcdV(5, 10), []Version{etcdV(5, 10)}},
		{"no change", etcdV(5, 10), etcdV(5, 10), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EtcdUpgradePath(tc.from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s -> %s: got %v, want %v", tc.from, tc.to, got, tc.want)
			}
		})
	}
	for _, tc := range []struct{ from, to Version }{
		{etcdV(6, 0), newest(l5)},
		{etcdV(1, 20), etcdV(3, 27)},
		{Version{Major: 2, Minor: 3, Patch: 0}, etcdV(2, 32)},
	} {
		if got, err := EtcdUpgradePath(tc.from, tc.to); err == nil {
			t.Errorf("%s -> %s: got %v, want an error", tc.from, tc.to, got)
		}
	}
}

// Whatever the start, every move to the next minor starts at or above the
// line's floor, and every line passed through is at its newest patch.
func TestEtcdUpgradePathsRespectFloors(t *testing.T) {
	last := etcdLines[len(etcdLines)-1]
	for _, from := range etcdLines {
		for p := 0; p <= from.LastPatch; p++ {
			start := etcdV(from.Minor, p)
			for _, to := range []Version{etcdV(last.Minor, 0), etcdV(last.Minor, last.LastPatch)} {
				if start.SameMinor(to) {
					continue // a patch change, one hop
				}
				path, err := EtcdUpgradePath(start, to)
				if err != nil {
					t.Fatalf("%s -> %s: %v", start, to, err)
				}
				cur := start
				for i, v := range path {
					switch {
					case v.SameMinor(cur):
						if i != 0 || v != etcdV(cur.Minor, from.LastPatch) {
							t.Errorf("%s -> %s: hop %d %s -> %s stays on its line without reaching its newest patch", start, to, i, cur, v)
						}
					case v.Minor == cur.Minor+1:
						if f, ok := EtcdUpgradeFloor(cur); ok && cur.Compare(f.Floor) < 0 {
							t.Errorf("%s -> %s: hop %d leaves %s below its floor %s", start, to, i, cur, f.Floor)
						}
						if v != to && v.Patch != lineOf(t, v.Minor).LastPatch {
							t.Errorf("%s -> %s: passes 3.%d at %s, not its newest patch", start, to, v.Minor, v)
						}
					default:
						t.Errorf("%s -> %s: hop %d %s -> %s skips a minor", start, to, i, cur, v)
					}
					cur = v
				}
				if cur != to {
					t.Errorf("%s -> %s: path %v ends at %s", start, to, path, cur)
				}
			}
		}
	}
}

func TestPostgresTableRows(t *testing.T) {
	for i, m := range postgresMajors {
		t.Run(fmt.Sprint(m.Major), func(t *testing.T) {
			if i > 0 && m.Major != postgresMajors[i-1].Major+1 {
				t.Errorf("major %d follows %d", m.Major, postgresMajors[i-1].Major)
			}
			newest := fmt.Sprintf("%d.%d", m.Major, m.LastMinor)
			checkSource(t, "newest minor", m.Newest, newest)
			for _, v := range []string{fmt.Sprintf("%d.0", m.Major), newest} {
				if _, err := ParsePostgresVersion(v); err != nil {
					t.Errorf("%s: %v", v, err)
				}
			}
			for minor, why := range m.Blocked {
				v := fmt.Sprintf("%d.%d", m.Major, minor)
				if minor >= m.LastMinor {
					t.Errorf("blocked minor %s is not below the newest %s", v, newest)
				}
				if _, err := ParsePostgresVersion(v); err == nil || err.Error() != why {
					t.Errorf("%s: got %v, want %q", v, err, why)
				}
				if !strings.Contains(PostgresSupported(), "except "+v) {
					t.Errorf("supported versions %q do not leave out %s", PostgresSupported(), v)
				}
			}
		})
	}
}

// A version past the newest cairn knows is refused, and the message names
// the range cairn runs.
func TestVersionsBeyondTheNewestAreRefused(t *testing.T) {
	for _, l := range etcdLines {
		v := etcdV(l.Minor, l.LastPatch+1).String()
		t.Run("etcd "+v, func(t *testing.T) {
			_, err := ParseEtcdVersion(v)
			want := fmt.Sprintf("etcd %s is not a version cairn can run; supported: %s", v, EtcdSupported())
			if err == nil || err.Error() != want {
				t.Fatalf("got %v, want %q", err, want)
			}
			if r := fmt.Sprintf("3.%d.0-3.%d.%d", l.Minor, l.Minor, l.LastPatch); !strings.Contains(err.Error(), r) {
				t.Errorf("%q does not name the range %s", err, r)
			}
		})
	}
	for _, m := range postgresMajors {
		v := fmt.Sprintf("%d.%d", m.Major, m.LastMinor+1)
		t.Run("PostgreSQL "+v, func(t *testing.T) {
			_, err := ParsePostgresVersion(v)
			want := fmt.Sprintf("PostgreSQL %s is not a version cairn can run; supported: %s", v, PostgresSupported())
			if err == nil || err.Error() != want {
				t.Fatalf("got %v, want %q", err, want)
			}
			if r := fmt.Sprintf("%d.0-%d.%d", m.Major, m.Major, m.LastMinor); !strings.Contains(err.Error(), r) {
				t.Errorf("%q does not name the range %s", err, r)
			}
		})
	}
	for _, v := range []string{"3.8.0", "4.0.0", "3.1.20"} {
		if _, err := ParseEtcdVersion(v); err == nil || !strings.Contains(err.Error(), "supported: "+EtcdSupported()) {
			t.Errorf("etcd %s: got %v", v, err)
		}
	}
	for _, v := range []string{"12.22", "19.0"} {
		if _, err := ParsePostgresVersion(v); err == nil || !strings.Contains(err.Error(), "supported: "+PostgresSupported()) {
			t.Errorf("PostgreSQL %s: got %v", v, err)
		}
	}
}
