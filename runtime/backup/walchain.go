package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// RecoveryPath is what a point-in-time recovery from one base backup
// reads from the WAL archive: the segments from the backup's end along
// the timelines that lead to Timeline, each one archived, with no gap.
type RecoveryPath struct {
	Archive     WALArchive
	SegmentSize int64
	// Timeline is the timeline recovery follows to its end: the newest
	// one descending from the backup's.
	Timeline uint32
	// Timelines are the timelines on the way, the backup's first.
	Timelines []uint32
	// ranges are the segments recovery reads on each timeline, in order.
	ranges []segmentRange
	// Last is the last segment of the chain, empty when nothing past the
	// backup is archived yet; LastArchived is when it was archived, the
	// latest point recovery is sure to reach (the backup's end when no
	// segment follows it).
	Last         string
	LastArchived time.Time
	// Gap is the first missing segment when the chain stops before a
	// later archived one; "" when it has none.
	Gap string
}

type segmentRange struct {
	tli      uint32
	from, to uint64 // to inclusive
}

// Needs says whether recovery must find name in the archive: a segment
// on the path up to Last. One of those the archive does not give is an
// error, never the end of recovery.
func (p RecoveryPath) Needs(name string) bool {
	s, err := ParseSegment(name, p.SegmentSize)
	if err != nil {
		return false
	}
	for _, r := range p.ranges {
		if r.tli == s.Timeline && s.No >= r.from && s.No <= r.to {
			return true
		}
	}
	return false
}

// ErrNoWAL is a backup no WAL archive continues: taken before its
// cluster archived WAL, or by a cairn that did not record its system.
var ErrNoWAL = errors.New("no archived WAL continues this backup")

// PlanRecovery finds the chain a recovery from backup m reads, up to the
// end of the archive (target zero: latest) or to target. It refuses a
// target before the backup ended (a base backup recovers only forwards),
// a target later than the chain reaches, and, for latest, a chain with a
// gap: recovery would stop at the gap and lose every write after it
// without a word. The error says where the gap is.
func PlanRecovery(ctx context.Context, st Store, m Manifest, target time.Time) (RecoveryPath, error) {
	pd := m.Postgres
	if pd == nil || pd.SystemID == "" {
		return RecoveryPath{}, fmt.Errorf("backup %s of %s: %w (it records no system identifier)", m.ID, m.Cluster, ErrNoWAL)
	}
	system, err := strconv.ParseUint(pd.SystemID, 10, 64)
	if err != nil {
		return RecoveryPath{}, fmt.Errorf("backup %s of %s: system identifier %q: %w", m.ID, m.Cluster, pd.SystemID, err)
	}
	size := pd.WALSegmentSize
	if size == 0 {
		size = DefaultWALSegmentSize
	}
	if !target.IsZero() && target.Before(m.Finished) {
		return RecoveryPath{}, fmt.Errorf("backup %s of %s finished at %s, after the target %s: recovery from a base backup only goes forwards; restore an earlier backup", m.ID, m.Cluster, m.Finished.UTC().Format(time.RFC3339), target.UTC().Format(time.RFC3339))
	}
	end, err := ParseLSN(pd.EndLSN)
	if err != nil {
		return RecoveryPath{}, fmt.Errorf("backup %s of %s: end: %w", m.ID, m.Cluster, err)
	}
	a := WALArchive{Store: st, Cluster: m.Cluster, System: system}
	files, err := a.list(ctx, size)
	if err != nil {
		return RecoveryPath{}, fmt.Errorf("WAL archive of %s: %w", m.Cluster, err)
	}
	p := RecoveryPath{Archive: a, SegmentSize: size, LastArchived: m.Finished}
	if err := p.timelines(ctx, files, uint32(pd.Timeline), end); err != nil {
		return RecoveryPath{}, err
	}
	p.walk(files)
	if p.Last != "" {
		if p.LastArchived, err = a.Archived(ctx, p.Last); err != nil {
			return RecoveryPath{}, fmt.Errorf("WAL archive of %s: %w", m.Cluster, err)
		}
	}
	reach := "the backup's end (" + m.Finished.UTC().Format(time.RFC3339) + "): no WAL past it is archived"
	if p.Last != "" {
		reach = fmt.Sprintf("%s, archived at %s", p.Last, p.LastArchived.UTC().Format(time.RFC3339))
	}
	switch {
	case target.IsZero() && p.Gap != "":
		return RecoveryPath{}, fmt.Errorf("the WAL archive of %s has a gap: %s is missing, and later segments are archived; recovery to the latest point would stop at the gap and lose every write after it. The chain from backup %s reaches %s; restore with a target time before that, or put the missing segment back", m.Cluster, p.Gap, m.ID, reach)
	case !target.IsZero() && !target.Before(p.LastArchived):
		why := "later WAL is not archived (yet)"
		if p.Gap != "" {
			why = fmt.Sprintf("the archive has a gap at %s", p.Gap)
		}
		return RecoveryPath{}, fmt.Errorf("the target %s is past what the WAL archive of %s holds from backup %s: the chain reaches %s, and %s", target.UTC().Format(time.RFC3339), m.Cluster, m.ID, reach, why)
	}
	return p, nil
}

// timelines picks the newest timeline whose history leads through the
// backup's timeline after the backup's end, and the path to it.
func (p *RecoveryPath) timelines(ctx context.Context, files walFiles, from uint32, end uint64) error {
	tlis := slices.Sorted(func(yield func(uint32) bool) {
		for t := range files.histories {
			if t > from && !yield(t) {
				return
			}
		}
	})
	for i := len(tlis) - 1; i >= 0; i-- {
		h, err := p.Archive.history(ctx, tlis[i])
		if err != nil {
			return fmt.Errorf("WAL archive of %s: %w", p.Archive.Cluster, err)
		}
		j := slices.IndexFunc(h, func(s TimelineSwitch) bool { return s.Parent == from })
		if j < 0 || h[j].LSN < end {
			continue // a branch that left before the backup's end
		}
		p.Timeline = tlis[i]
		seg := uint64(p.SegmentSize)
		cur := end / seg
		for _, s := range h[j:] {
			p.Timelines = append(p.Timelines, s.Parent)
			// The segment holding the switch is read on the new timeline.
			if last := s.LSN / seg; last > cur {
				p.ranges = append(p.ranges, segmentRange{tli: s.Parent, from: cur, to: last - 1})
			}
			cur = max(cur, s.LSN/seg)
		}
		p.Timelines = append(p.Timelines, p.Timeline)
		p.ranges = append(p.ranges, segmentRange{tli: p.Timeline, from: cur, to: ^uint64(0)})
		return nil
	}
	p.Timeline, p.Timelines = from, []uint32{from}
	p.ranges = []segmentRange{{tli: from, from: end / uint64(p.SegmentSize), to: ^uint64(0)}}
	return nil
}

// walk checks each range of the path: the closed ones all archived, the
// last one from its start for as long as segments follow one another. The
// ranges are narrowed to what is there, and Last and Gap set. The
// segment the backup ended in is in its tar only as far as the backup
// went, so it is needed from the archive like any other.
func (p *RecoveryPath) walk(files walFiles) {
	for i := range p.ranges {
		r := &p.ranges[i]
		open := i == len(p.ranges)-1
		n := r.from
		for ; open || n <= r.to; n++ {
			s := Segment{Timeline: r.tli, No: n}
			if !files.segments[s] {
				break
			}
			p.Last = s.Name(p.SegmentSize)
		}
		if !open && n <= r.to {
			p.Gap = Segment{Timeline: r.tli, No: n}.Name(p.SegmentSize)
			r.to = n - 1 // from >= 1: segment 0 is never written
			p.ranges = p.ranges[:i+1]
			return
		}
		if open {
			r.to = n - 1
			for s := range files.segments {
				if s.Timeline == r.tli && s.No > n {
					p.Gap = Segment{Timeline: r.tli, No: n}.Name(p.SegmentSize)
					return
				}
			}
		}
	}
}

// ParseTarget reads a point-in-time restore's target: an RFC 3339 time,
// or contract.RestoreLatest (the zero time: the end of the archive).
func ParseTarget(s string) (time.Time, error) {
	if s == contract.RestoreLatest {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time such as 2026-11-30T14:05:00Z, nor %s", s, contract.RestoreLatest)
	}
	return t, nil
}

// RecoverySettings are the settings that make a restored data directory
// recover to target (zero: to the end of the archive) with
// restoreCommand, then promote, following the newest timeline.
func RecoverySettings(restoreCommand string, target time.Time) map[string]string {
	s := map[string]string{
		"restore_command":          restoreCommand,
		"recovery_target_action":   "promote",
		"recovery_target_timeline": "latest",
	}
	if !target.IsZero() {
		s["recovery_target_time"] = target.UTC().Format("2006-01-02 15:04:05.999999") + "+00"
	}
	return s
}
