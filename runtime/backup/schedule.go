package backup

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Policy is a cluster's backup policy as the rendered <cluster>-cairn
// ConfigMap states it (the contract.KeyBackup* keys), with the on-demand
// request the ConfigMap names, whose backup retention pins.
type Policy struct {
	Schedule string
	TimeZone string
	Location string
	Retention
}

// PolicyFromConfig reads the backup keys of the rendered ConfigMap; ok
// is false when the cluster has no backup policy.
func PolicyFromConfig(data map[string]string) (p Policy, ok bool, err error) {
	p = Policy{Schedule: data[contract.KeyBackupSchedule], TimeZone: data[contract.KeyBackupTimeZone], Location: data[contract.KeyBackupStorageLocation]}
	p.Request = data[contract.KeyRequestBackupID]
	if p.Schedule == "" {
		return p, false, nil
	}
	if v := data[contract.KeyBackupRetentionCount]; v != "" {
		if p.Count, err = strconv.Atoi(v); err != nil || p.Count < 1 {
			return p, false, fmt.Errorf("%s %q: want a whole number of at least 1", contract.KeyBackupRetentionCount, v)
		}
	}
	if v := data[contract.KeyBackupRetentionMaxAge]; v != "" {
		if p.MaxAge, err = parseAge(v); err != nil {
			return p, false, fmt.Errorf("%s %q: %w", contract.KeyBackupRetentionMaxAge, v, err)
		}
	}
	if _, err := p.Parse(); err != nil {
		return p, false, err
	}
	if _, err := ParseLocation(p.Location); err != nil {
		return p, false, err
	}
	return p, true, nil
}

// parseAge reads a Go duration or a number of days ("30d").
func parseAge(v string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("want a duration such as 30d or 720h")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want a duration such as 30d or 720h")
	}
	return d, nil
}

// Schedule is a parsed cron schedule in its time zone.
type Schedule struct {
	cron.Schedule
	Loc *time.Location
}

// Parse parses the policy's schedule in its time zone (UTC by default).
func (p Policy) Parse() (Schedule, error) {
	loc := time.UTC
	if p.TimeZone != "" {
		l, err := time.LoadLocation(p.TimeZone)
		if err != nil {
			return Schedule{}, fmt.Errorf("%s %q: %w", contract.KeyBackupTimeZone, p.TimeZone, err)
		}
		loc = l
	}
	// The spec's parser: 5 fields, 6 with seconds first, or a descriptor.
	s, err := spec.Schedule(p.Schedule).Parse()
	if err != nil {
		return Schedule{}, fmt.Errorf("%s %q: %w", contract.KeyBackupSchedule, p.Schedule, err)
	}
	return Schedule{Schedule: s, Loc: loc}, nil
}

// NextAfter is the first run strictly after t.
func (s Schedule) NextAfter(t time.Time) time.Time { return s.Next(t.In(s.Loc)) }

// Missed reports whether a run was due between the last successful
// backup and now, so a runtime that was down (or not leading) then takes
// one backup at once, however many runs it missed. A cluster never backed
// up waits for its first scheduled run.
func (s Schedule) Missed(last, now time.Time) bool {
	return !last.IsZero() && !s.NextAfter(last).After(now)
}
