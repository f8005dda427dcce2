package contract

import "time"

// PostgresCrashRestartSetting is the custom PostgreSQL setting through
// which a member's instance manager tells the runtime that its server
// was restarted in place after a crash: the instance manager starts the
// server again with it set (on the command line, never in a rendered
// file) to the time of the crash, RFC 3339 with nanoseconds in UTC. It
// is unset on a server started any other way. The runtime reads it with
// CrashRestartReadSQL.
const PostgresCrashRestartSetting = "cairn.crash_restart"

// CrashRestartReadSQL is an expression for a server's
// PostgresCrashRestartSetting, "" when it is not set.
const CrashRestartReadSQL = `COALESCE(current_setting('` + PostgresCrashRestartSetting + `', true), '')`

// PostgresCrashLoopWindow: a server that crashes again less than this
// after it recovered in place from a crash is in a crash loop. Its
// instance manager does not restart it in place a second time (the pod's
// restart policy takes over), and the runtime does not wait for another
// recovery in place: it fails over from a primary as from one that is
// gone. A minute is longer than any recovery in place the runtime waits
// for, so a server that dies again at its first load after one is
// caught, and short enough that a crash now and then, days apart, is
// recovered in place each time.
const PostgresCrashLoopWindow = time.Minute

// FormatCrashTime formats the time of a crash for
// PostgresCrashRestartSetting, and ParseCrashTime reads it back.
func FormatCrashTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ParseCrashTime reads a PostgresCrashRestartSetting value; "" is the
// zero time (no crash).
func ParseCrashTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
