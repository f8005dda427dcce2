package backup

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/cairn-dev/cairn/planner/spec"
)

// Policy is a cluster's backup policy as the rendered <cluster>-cairn
// ConfigMap states it (keys backup.*).
type Policy struct {
	Schedule string
	TimeZone string
	Location string
	Retention
}

// PolicyFromConfig reads the backup.* keys of the rendered ConfigMap; ok
// is false when the cluster has no backup policy.
func PolicyFromConfig(data map[string]string) (p Policy, ok bool, err error) {
	p = Policy{Schedule: data["backup.schedule"], TimeZone: data["backup.time-zone"], Location: data["backup.storage-location"]}
	if p.Schedule == "" {
		return p, false, nil
	}
	if v := data["backup.retention.count"]; v != "" {
		if p.Count, err = strconv.Atoi(v); err != nil || p.Count < 1 {
			return p, false, fmt.Errorf("backup.retention.count %q: want a whole number of at least 1", v)
		}
	}
	if v := data["backup.retention.max-age"]; v != "" {
		if p.MaxAge, err = parseAge(v); err != nil {
			return p, false, fmt.Errorf("backup.retention.max-age %q: %w", v, err)
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
			return Schedule{}, fmt.Errorf("backup.time-zone %q: %w", p.TimeZone, err)
		}
		loc = l
	}
	// The spec's parser: 5 fields, 6 with seconds first, or a descriptor.
	s, err := spec.Schedule(p.Schedule).Parse()
	if err != nil {
		return Schedule{}, fmt.Errorf("backup.schedule %q: %w", p.Schedule, err)
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
