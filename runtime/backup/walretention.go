package backup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// PruneWAL deletes the archived WAL of cluster that no kept base backup
// needs: of a system with kept backups, the segments (and partial and
// backup history files) before the oldest kept backup's start; of a
// system without any, everything but its timeline histories, once the
// newest kept backup (another system's: after a major upgrade) started
// after the system's last segment was archived. Timeline histories stay:
// they are small, and a recovery picks its next timeline by them. It
// deletes nothing when it cannot list or read what it would decide by.
func PruneWAL(ctx context.Context, st Store, cluster string, kept []Manifest) ([]string, error) {
	if len(kept) == 0 {
		return nil, nil
	}
	root := walFolder + "/" + cluster + "/"
	keys, err := st.List(ctx, root)
	if err != nil {
		return nil, err
	}
	// One listing for every system: each one's keys, by its folder.
	systems := map[uint64][]string{}
	for _, k := range keys {
		sys, _, _ := strings.Cut(strings.TrimPrefix(k, root), "/")
		if id, err := strconv.ParseUint(sys, 10, 64); err == nil {
			systems[id] = append(systems[id], k)
		}
	}
	newest := kept[len(kept)-1]
	var deleted []string
	var errs []error
	for _, sys := range slices.Sorted(maps.Keys(systems)) {
		a := WALArchive{Store: st, Cluster: cluster, System: sys}
		bound, size, found, err := oldestStart(kept, sys)
		if err != nil {
			return deleted, err
		}
		files, err := a.files(systems[sys], size)
		if err != nil {
			return deleted, err
		}
		if !found {
			if last, ok := files.lastSegment(); ok {
				t, err := a.Archived(ctx, last.Name(size))
				if err != nil || !t.Before(newest.Started) {
					errs = append(errs, err)
					continue // still being written, or unreadable: keep
				}
			}
			bound = ^uint64(0)
		}
		for _, name := range files.before(bound, size) {
			if err := st.Delete(ctx, a.key(name)); err != nil {
				errs = append(errs, err)
				continue
			}
			deleted = append(deleted, name)
		}
	}
	return deleted, errors.Join(errs...)
}

// oldestStart is the first segment the kept backups of system need (the
// one their oldest start is in) and their segment size.
func oldestStart(kept []Manifest, system uint64) (bound uint64, size int64, found bool, err error) {
	bound, size = ^uint64(0), DefaultWALSegmentSize
	want := strconv.FormatUint(system, 10)
	for _, m := range kept {
		if m.Postgres == nil || m.Postgres.SystemID != want {
			continue
		}
		lsn, err := ParseLSN(m.Postgres.StartLSN)
		if err != nil {
			return 0, 0, false, fmt.Errorf("backup %s of %s: start: %w", m.ID, m.Cluster, err)
		}
		if m.Postgres.WALSegmentSize > 0 {
			size = m.Postgres.WALSegmentSize
		}
		bound, found = min(bound, lsn/uint64(size)), true
	}
	return bound, size, found, nil
}

func (w walFiles) lastSegment() (Segment, bool) {
	var last Segment
	ok := false
	for s := range w.segments {
		if !ok || s.No > last.No || (s.No == last.No && s.Timeline > last.Timeline) {
			last, ok = s, true
		}
	}
	return last, ok
}

// before are the segments, partial segments and backup history files
// before segment number bound, by name, sorted.
func (w walFiles) before(bound uint64, size int64) []string {
	var out []string
	for s := range w.segments {
		if s.No < bound {
			out = append(out, s.Name(size))
		}
	}
	for _, name := range w.other {
		if s, err := ParseSegment(name[:24], size); err == nil && s.No < bound {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
