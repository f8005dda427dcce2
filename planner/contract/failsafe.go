package contract

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PostgresLeaseTTL is the members' and the runtime's default --lease-ttl:
// a primary that can neither confirm its role label through the API
// server nor count every other member following it (its failsafe) for
// this long stops itself, and the runtime promotes in place of a fenced
// primary it cannot reach only after it (plus a margin) has passed since
// the fence and the failsafe's last detach. It bounds how long a primary
// cut off from everything may still take writes with asynchronous
// replication.
const PostgresLeaseTTL = 10 * time.Second

// PostgresFailsafeSetting is the custom PostgreSQL setting in which the
// runtime tells a primary which members its failsafe counts. Its value is
// a Failsafe, formatted. It is set on the superuser role (ALTER ROLE ...
// SET, on the primary itself, so no mounted file lags behind a scale
// step; ALTER SYSTEM takes no custom setting before PostgreSQL 17), and
// read from the catalog (FailsafeReadSQL), so a session open before the
// change sees it too. The catalog replicates: a copy on another member
// names the primary it was written for, and is ignored there.
const PostgresFailsafeSetting = "cairn.failsafe"

// FailsafeReadSQL is an expression that reads the failsafe value from the
// catalog: "" when none is set.
func FailsafeReadSQL() string {
	return `COALESCE((SELECT substr(c, ` + strconv.Itoa(len(PostgresFailsafeSetting)+2) + `) FROM pg_db_role_setting s, unnest(s.setconfig) c
    WHERE s.setdatabase = 0 AND s.setrole = (SELECT oid FROM pg_roles WHERE rolname = '` + PostgresSuperuser + `')
      AND c LIKE '` + PostgresFailsafeSetting + `=%' LIMIT 1), '')`
}

// WriteTimelineSQL is an expression for the timeline a primary writes on
// (the first eight hex digits of its current WAL file's name), 0 on a
// standby: the timeline a Failsafe names, read alike by the runtime and
// the primary.
const WriteTimelineSQL = `CASE WHEN pg_is_in_recovery() THEN 0
    ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int8 END`

// FailsafeWriteSQL sets the failsafe value f (formatted by Failsafe.String,
// whose names are DNS labels: nothing to quote). The commit waits for no
// synchronous standby: one that is down must not hold the runtime up, and
// a value lost with the primary names it alone.
func FailsafeWriteSQL(value string) []string {
	return []string{
		"BEGIN",
		"SET LOCAL synchronous_commit = local",
		"ALTER ROLE " + PostgresSuperuser + " SET " + PostgresFailsafeSetting + " = '" + strings.ReplaceAll(value, "'", "''") + "'",
		"COMMIT",
	}
}

// Failsafe is what the runtime wrote for one primary: while its API
// server does not answer, the primary named Primary keeps its lease as
// long as every other member of Members follows it (as Patroni's
// failsafe mode asks of every member it knows, not a majority: the
// runtime then needs to reach one member only, the one it would promote,
// to take the failsafe away; with a majority, the side of a partition
// with more members would keep the cluster, and a primary on a node that
// holds most members could never be failed over from). It is honoured
// only on the timeline it was written for: a copy that a clone or a
// rewind carried to another member, or one left from an earlier term of
// the same member, is ignored.
type Failsafe struct {
	Primary  string
	Timeline int64
	// Members are every member of the cluster, sorted, Primary among
	// them.
	Members []string
}

// String is the setting's value: "<primary> <timeline> <m1>,<m2>,...".
func (f Failsafe) String() string {
	return f.Primary + " " + strconv.FormatInt(f.Timeline, 10) + " " + strings.Join(f.Members, ",")
}

// Others are the members besides Primary, all of which must follow it.
func (f Failsafe) Others() []string {
	var o []string
	for _, m := range f.Members {
		if m != f.Primary {
			o = append(o, m)
		}
	}
	return o
}

// ParseFailsafe reads a PostgresFailsafeSetting value. "" is no failsafe
// (ok false, no error).
func ParseFailsafe(s string) (f Failsafe, ok bool, err error) {
	if s == "" {
		return Failsafe{}, false, nil
	}
	parts := strings.Split(s, " ")
	if len(parts) != 3 {
		return Failsafe{}, false, fmt.Errorf("%s %q: want \"<primary> <timeline> <members>\"", PostgresFailsafeSetting, s)
	}
	f.Primary = parts[0]
	if f.Timeline, err = strconv.ParseInt(parts[1], 10, 64); err != nil || f.Timeline < 1 {
		return Failsafe{}, false, fmt.Errorf("%s %q: timeline %q is not a positive number", PostgresFailsafeSetting, s, parts[1])
	}
	f.Members = strings.Split(parts[2], ",")
	for _, m := range append([]string{f.Primary}, f.Members...) {
		if err := ValidateMemberName(m); err != nil {
			return Failsafe{}, false, fmt.Errorf("%s %q: %w", PostgresFailsafeSetting, s, err)
		}
	}
	if !slices.IsSorted(f.Members) || len(slices.Compact(slices.Clone(f.Members))) != len(f.Members) {
		return Failsafe{}, false, fmt.Errorf("%s %q: members are not sorted and distinct", PostgresFailsafeSetting, s)
	}
	if !slices.Contains(f.Members, f.Primary) {
		return Failsafe{}, false, fmt.Errorf("%s %q: %s is not among its members", PostgresFailsafeSetting, s, f.Primary)
	}
	return f, true, nil
}

// ValidateMemberName checks a member (pod) name as the failsafe setting
// carries it: a DNS label.
func ValidateMemberName(s string) error {
	if s == "" || len(s) > 63 {
		return fmt.Errorf("member name %q: want 1 to 63 characters", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(s)-1
		if !ok {
			return fmt.Errorf("member name %q: not a DNS label (a-z, 0-9, '-' inside)", s)
		}
	}
	return nil
}
