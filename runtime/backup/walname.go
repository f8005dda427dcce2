package backup

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DefaultWALSegmentSize is PostgreSQL's default wal_segment_size, used
// for a manifest that does not record one.
const DefaultWALSegmentSize = 16 << 20

// WAL file names as PostgreSQL archives them. A segment is 24 hex digits:
// its timeline, then the high and low halves of its number ("log" and
// "seg"); a timeline's history is TTTTTTTT.history; a segment a promoted
// standby left half-written on its old timeline ends in .partial; a base
// backup's history file is <segment>.<offset>.backup.
var (
	walSegmentName = regexp.MustCompile(`^[0-9A-F]{24}$`)
	walHistoryName = regexp.MustCompile(`^[0-9A-F]{8}\.history$`)
	walPartialName = regexp.MustCompile(`^[0-9A-F]{24}\.partial$`)
	walBackupName  = regexp.MustCompile(`^[0-9A-F]{24}\.[0-9A-F]{8}\.backup$`)
)

// MaxWALSegmentSize is PostgreSQL's largest wal_segment_size (1 GiB):
// no segment, partial segment included, is larger.
const MaxWALSegmentSize = 1 << 30

// maxWALTextSize bounds a timeline history or backup history file, text
// PostgreSQL writes a line to per timeline switch or per base backup:
// 1 MiB holds thousands of timelines.
const maxWALTextSize = 1 << 20

// maxWALFileSize is the most bytes an archived file of that name may
// hold once decompressed: a fetch or a checksum reads no further, so a
// damaged or planted archive cannot fill the disk of pg_wal or run on.
func maxWALFileSize(name string) int64 {
	if walHistoryName.MatchString(name) || walBackupName.MatchString(name) {
		return maxWALTextSize
	}
	return MaxWALSegmentSize
}

// CheckWALName refuses anything that is not a file name PostgreSQL
// archives: a name reaches an object key and a path.
func CheckWALName(name string) error {
	if walSegmentName.MatchString(name) || walHistoryName.MatchString(name) || walPartialName.MatchString(name) || walBackupName.MatchString(name) {
		return nil
	}
	return fmt.Errorf("%q is not the name of a WAL segment, timeline history, partial segment or backup history file", name)
}

// Segment is one WAL segment: its timeline and its number, counted in
// segments of the cluster's wal_segment_size from the start of WAL.
type Segment struct {
	Timeline uint32
	No       uint64
}

// segmentsPerLog is how many segments of size make one "log" (4 GiB of
// WAL), the high half of a segment's name.
func segmentsPerLog(size int64) uint64 { return 0x100000000 / uint64(size) }

// ParseSegment reads a segment's file name (24 hex digits).
func ParseSegment(name string, size int64) (Segment, error) {
	if !walSegmentName.MatchString(name) {
		return Segment{}, fmt.Errorf("%q is not a WAL segment name", name)
	}
	tli, _ := strconv.ParseUint(name[:8], 16, 32)
	log, _ := strconv.ParseUint(name[8:16], 16, 32)
	seg, _ := strconv.ParseUint(name[16:], 16, 32)
	per := segmentsPerLog(size)
	if seg >= per {
		return Segment{}, fmt.Errorf("%q is not a segment of %d bytes", name, size)
	}
	return Segment{Timeline: uint32(tli), No: log*per + seg}, nil
}

// Name is the segment's file name.
func (s Segment) Name(size int64) string {
	per := segmentsPerLog(size)
	return fmt.Sprintf("%08X%08X%08X", s.Timeline, s.No/per, s.No%per)
}

// HistoryName is the file name of timeline tli's history.
func HistoryName(tli uint32) string { return fmt.Sprintf("%08X.history", tli) }

// ParseLSN reads a WAL position written as PostgreSQL does ("0/3000028").
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("%q is not a WAL position", s)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%q is not a WAL position", s)
	}
	return h<<32 | l, nil
}

// FormatLSN writes a WAL position as PostgreSQL does.
func FormatLSN(lsn uint64) string { return fmt.Sprintf("%X/%X", lsn>>32, lsn&0xFFFFFFFF) }

// TimelineSwitch is one line of a timeline history file: the timeline
// Parent was left at LSN for the next one.
type TimelineSwitch struct {
	Parent uint32
	LSN    uint64
}

// ParseHistory reads a timeline history file: one line per ancestor,
// "parentTLI<TAB>switchpoint<TAB>reason", oldest first; # comments and
// blank lines are skipped.
func ParseHistory(name string, data []byte) ([]TimelineSwitch, error) {
	var out []TimelineSwitch
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("%s:%d: %q is not a timeline switch", name, i+1, line)
		}
		tli, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %q is not a timeline", name, i+1, f[0])
		}
		lsn, err := ParseLSN(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		if n := len(out); n > 0 && (uint32(tli) <= out[n-1].Parent || lsn < out[n-1].LSN) {
			return nil, fmt.Errorf("%s:%d: timeline %d at %s does not follow the line before it", name, i+1, tli, f[1])
		}
		out = append(out, TimelineSwitch{Parent: uint32(tli), LSN: lsn})
	}
	return out, nil
}
