package spec

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// Quantity is a Kubernetes resource quantity as written ("100Gi", "500m").
type Quantity string

// UnmarshalScalar implements strictyaml.ScalarUnmarshaler.
func (q *Quantity) UnmarshalScalar(s strictyaml.Scalar) error {
	if s.Tag != "!!str" && s.Tag != "!!int" {
		return fmt.Errorf("must be a Kubernetes quantity such as 100Gi or 500m, got %s", strictyaml.Quote(s.Value))
	}
	v, err := resource.ParseQuantity(s.Value)
	if err != nil {
		return fmt.Errorf("must be a Kubernetes quantity such as 100Gi or 500m, got %s", strictyaml.Quote(s.Value))
	}
	if v.Sign() <= 0 {
		return fmt.Errorf("must be greater than zero, got %s", strictyaml.Quote(s.Value))
	}
	*q = Quantity(s.Value)
	return nil
}

// Parse returns the quantity's value. Decoded quantities always parse.
func (q Quantity) Parse() (resource.Quantity, error) { return resource.ParseQuantity(string(q)) }

// Cmp compares two quantities by value; unparsable ones compare as zero.
func (q Quantity) Cmp(o Quantity) int {
	a, _ := q.Parse()
	b, _ := o.Parse()
	return a.Cmp(b)
}

// Duration is a length of time as written: Go syntax ("90m", "2h30m") or
// whole days and weeks ("30d", "2w").
type Duration string

var dayWeek = regexp.MustCompile(`^([0-9]{1,4})(d|w)$`)

// UnmarshalScalar implements strictyaml.ScalarUnmarshaler.
func (d *Duration) UnmarshalScalar(s strictyaml.Scalar) error {
	v := Duration(s.Value)
	if _, err := v.Parse(); err != nil || s.Tag != "!!str" {
		return fmt.Errorf("must be a duration such as 90m, 6h or 30d, got %s", strictyaml.Quote(s.Value))
	}
	*d = v
	return nil
}

// Parse returns the duration's length.
func (d Duration) Parse() (time.Duration, error) {
	if m := dayWeek.FindStringSubmatch(string(d)); m != nil {
		n, _ := strconv.Atoi(m[1])
		unit := 24 * time.Hour
		if m[2] == "w" {
			unit *= 7
		}
		return time.Duration(n) * unit, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, err
	}
	if v <= 0 {
		return 0, errors.New("duration must be positive")
	}
	return v, nil
}

// Schedule is a cron expression: 5 fields, 6 fields with seconds first, or
// a descriptor such as @daily.
type Schedule string

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// UnmarshalScalar implements strictyaml.ScalarUnmarshaler.
func (c *Schedule) UnmarshalScalar(s strictyaml.Scalar) error {
	if s.Tag != "!!str" {
		return fmt.Errorf("must be a quoted cron expression such as \"0 2 * * *\", got %s", strictyaml.Quote(s.Value))
	}
	if _, err := Schedule(s.Value).Parse(); err != nil {
		return err
	}
	*c = Schedule(s.Value)
	return nil
}

// Parse parses the expression with robfig/cron in UTC; callers that honour
// a time zone set it on the returned schedule's input times.
func (c Schedule) Parse() (cron.Schedule, error) {
	v := strings.TrimSpace(string(c))
	if strings.HasPrefix(v, "TZ=") || strings.HasPrefix(v, "CRON_TZ=") {
		return nil, fmt.Errorf("cron expression %s must not carry a time zone; use the timeZone field", strictyaml.Quote(v))
	}
	sched, err := cronParser.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("invalid cron expression %s: %v; valid: 5 fields (minute hour day-of-month month day-of-week) such as \"0 2 * * *\", 6 fields with seconds first, or @hourly/@daily/@weekly/@monthly/@yearly", strictyaml.Quote(v), err)
	}
	return sched, nil
}

// The bounds of a member's volume (spec.storage): below 1Gi neither
// PostgreSQL nor etcd keeps a working set and its WAL, and no volume a
// cloud or a storage system offers comes near 1Pi (a size past it is a
// typo, not a plan).
var (
	MinStorage = resource.MustParse("1Gi")
	MaxStorage = resource.MustParse("1Pi")
)

// CheckFires refuses a schedule that never fires (the 30th of February)
// and an @every shorter than a second: cron fires at most once a second,
// so "@every 1ns" would say one thing and do another. It looks for the
// schedule's first time from a fixed instant, so a spec is valid or not
// whatever the day.
func (c Schedule) CheckFires() error {
	sched, err := c.Parse()
	if err != nil {
		return err
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok {
		v := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(c)), "@every"))
		if d, err := time.ParseDuration(v); err == nil && d < time.Second {
			return fmt.Errorf("%s is shorter than a second, and cron fires at most once a second (it would run every %s)", strictyaml.Quote(string(c)), every.Delay)
		}
	}
	if sched.Next(firesFrom).IsZero() {
		return fmt.Errorf("%s never fires", strictyaml.Quote(string(c)))
	}
	return nil
}

// firesFrom is where CheckFires looks for a schedule's first time.
var firesFrom = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Location is where backups are stored: s3://bucket/prefix or
// file:///absolute/path.
type Location string

var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// UnmarshalScalar implements strictyaml.ScalarUnmarshaler.
func (l *Location) UnmarshalScalar(s strictyaml.Scalar) error {
	if s.Tag != "!!str" {
		return fmt.Errorf("must be s3://bucket/prefix or file:///path, got %s", strictyaml.Quote(s.Value))
	}
	if err := checkLocation(s.Value); err != nil {
		return err
	}
	*l = Location(s.Value)
	return nil
}

func checkLocation(v string) error {
	u, err := url.Parse(v)
	if err != nil || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("must be s3://bucket/prefix or file:///path, got %s", strictyaml.Quote(v))
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("path of %s must not contain . or .. segments", strictyaml.Quote(v))
		}
	}
	switch u.Scheme {
	case "s3":
		if !bucketRE.MatchString(u.Host) || strings.Contains(u.Host, "..") {
			return fmt.Errorf("bucket %s is not a valid S3 bucket name (3-63 lowercase letters, digits, dots and dashes)", strictyaml.Quote(u.Host))
		}
	case "file":
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") || len(u.Path) < 2 {
			return fmt.Errorf("file location %s must be an absolute path such as file:///var/backups", strictyaml.Quote(v))
		}
	default:
		return fmt.Errorf("scheme of %s must be s3 or file", strictyaml.Quote(v))
	}
	return nil
}

// ParamValue is a postgresql.conf value. Unquoted numbers and booleans are
// kept as written.
type ParamValue string

// UnmarshalScalar implements strictyaml.ScalarUnmarshaler.
func (p *ParamValue) UnmarshalScalar(s strictyaml.Scalar) error {
	if err := checkParamText(s.Value); err != nil {
		return err
	}
	*p = ParamValue(s.Value)
	return nil
}

// PostgresVersion is a PostgreSQL "major.minor" version cairn can run.
type PostgresVersion string

// UnmarshalScalar implements strictyaml.ScalarUnmarshaler.
func (v *PostgresVersion) UnmarshalScalar(s strictyaml.Scalar) error {
	if s.Tag != "!!str" {
		return fmt.Errorf("must be a quoted version such as \"14.5\", got %s (unquoted, 14.10 would be read as the number 14.1)", strictyaml.Quote(s.Value))
	}
	if _, err := ParsePostgresVersion(s.Value); err != nil {
		return err
	}
	*v = PostgresVersion(s.Value)
	return nil
}

// Parse returns the parsed version. Decoded versions always parse.
func (v PostgresVersion) Parse() Version {
	p, _ := ParsePostgresVersion(string(v))
	return p
}

// EtcdVersion is an etcd "major.minor.patch" version cairn can run.
type EtcdVersion string

// UnmarshalScalar implements strictyaml.ScalarUnmarshaler.
func (v *EtcdVersion) UnmarshalScalar(s strictyaml.Scalar) error {
	if s.Tag != "!!str" {
		return fmt.Errorf("must be a quoted version such as \"3.5.21\", got %s", strictyaml.Quote(s.Value))
	}
	if _, err := ParseEtcdVersion(s.Value); err != nil {
		return err
	}
	*v = EtcdVersion(s.Value)
	return nil
}

// Parse returns the parsed version. Decoded versions always parse.
func (v EtcdVersion) Parse() Version {
	p, _ := ParseEtcdVersion(string(v))
	return p
}
