package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// The defaults of spec.compaction and spec.spaceQuota. They are applied
// where the spec is read (EtcdSpec.CompactionPolicy, QuotaBytes), not
// written into the spec, so that a spec that leaves them out keeps its
// fingerprint.
const (
	DefaultEtcdCompactionMode      = contract.EtcdCompactionPeriodic
	DefaultEtcdCompactionRetention = "1h"
	DefaultEtcdSpaceQuota          = Quantity("2Gi")
)

// Bounds of spec.spaceQuota and spec.compaction.retention.
const (
	// MinEtcdSpaceQuota: below it etcd's own bookkeeping fills the quota.
	MinEtcdSpaceQuota = int64(1 << 20)
	// MaxEtcdSpaceQuota is the memory map etcd opens its database with
	// (bbolt's initial mmap size, which cairn does not raise): a database
	// that grows beyond it is remapped, and every read and write waits
	// while it is.
	MaxEtcdSpaceQuota = int64(10 << 30)
	// EtcdSuggestedMaxQuota is the largest quota etcd suggests; it warns
	// at start above it.
	EtcdSuggestedMaxQuota = int64(8 << 30)
	// MinEtcdPeriodicRetention is the shortest periodic retention.
	MinEtcdPeriodicRetention = time.Minute
	// MaxEtcdRevisionRetention bounds a revision retention.
	MaxEtcdRevisionRetention = 1_000_000_000
)

// CompactionRetention is a compaction's retention as written: a duration
// in periodic mode, a number of revisions in revision mode.
type CompactionRetention string

var revisionsRE = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)

// UnmarshalScalar implements strictyaml.ScalarUnmarshaler.
func (r *CompactionRetention) UnmarshalScalar(s strictyaml.Scalar) error {
	if s.Tag != "!!str" && s.Tag != "!!int" {
		return fmt.Errorf("must be a duration such as 1h or a number of revisions such as 10000, got %s", strictyaml.Quote(s.Value))
	}
	*r = CompactionRetention(s.Value)
	return nil
}

// Revisions returns a revision retention's count.
func (r CompactionRetention) Revisions() (int64, error) {
	if !revisionsRE.MatchString(string(r)) {
		return 0, fmt.Errorf("must be a number of revisions, 1 to %d, such as 10000, got %s", MaxEtcdRevisionRetention, strictyaml.Quote(string(r)))
	}
	n, err := strconv.ParseInt(string(r), 10, 64)
	if err != nil || n > MaxEtcdRevisionRetention {
		return 0, fmt.Errorf("must be a number of revisions, 1 to %d, got %s", MaxEtcdRevisionRetention, strictyaml.Quote(string(r)))
	}
	return n, nil
}

// Period returns a periodic retention's length.
func (r CompactionRetention) Period() (time.Duration, error) {
	d, err := Duration(r).Parse()
	switch {
	case err != nil:
		return 0, fmt.Errorf("must be a duration such as 1h or 1d, got %s", strictyaml.Quote(string(r)))
	case d < MinEtcdPeriodicRetention:
		return 0, fmt.Errorf("must be at least %s, got %s", MinEtcdPeriodicRetention, strictyaml.Quote(string(r)))
	}
	return d, nil
}

// CompactionPolicy is the compaction the spec asks for, its default
// filled in.
func (s EtcdSpec) CompactionPolicy() EtcdCompaction {
	if s.Compaction == nil {
		return EtcdCompaction{Mode: DefaultEtcdCompactionMode, Retention: DefaultEtcdCompactionRetention}
	}
	return *s.Compaction
}

// QuotaBytes is the space quota the spec asks for, in bytes, its default
// filled in.
func (s EtcdSpec) QuotaBytes() int64 {
	q := s.SpaceQuota
	if q == "" {
		q = DefaultEtcdSpaceQuota
	}
	v, err := q.Parse()
	if err != nil {
		return contract.EtcdDefaultQuotaBytes // validation refused it
	}
	return v.Value()
}

// etcdMaintenance checks spec.compaction and spec.spaceQuota.
func (v *Validator) etcdMaintenance(s EtcdSpec) {
	if c := s.Compaction; c != nil {
		var err error
		switch c.Mode {
		case contract.EtcdCompactionPeriodic:
			_, err = c.Retention.Period()
		case contract.EtcdCompactionRevision:
			_, err = c.Retention.Revisions()
		default:
			v.Fail("spec.compaction.mode", "must be %s or %s, got %s", contract.EtcdCompactionPeriodic, contract.EtcdCompactionRevision, strictyaml.Quote(c.Mode))
		}
		if err != nil {
			v.Fail("spec.compaction.retention", "in %s mode it %v", c.Mode, err)
		}
	}
	if s.SpaceQuota == "" {
		return
	}
	q := s.QuotaBytes()
	switch {
	case q < MinEtcdSpaceQuota:
		v.Fail("spec.spaceQuota", "must be at least 1Mi, got %s", s.SpaceQuota)
	case q > MaxEtcdSpaceQuota:
		v.Fail("spec.spaceQuota", "must be at most 10Gi, got %s: beyond the 10 GiB memory map etcd opens its database with, every growth of the file remaps it and blocks reads and writes (etcd suggests at most 8Gi)", s.SpaceQuota)
	}
	if st, err := s.Storage.Parse(); err == nil && 2*q > st.Value() {
		v.Fail("spec.spaceQuota", "%s needs storage of at least twice as much (%s is set): defragmentation writes a copy of the database beside it; raise spec.storage or lower the quota", s.SpaceQuota, s.Storage)
	}
}
