package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Retention says which complete backups to keep. Zero values keep all.
type Retention struct {
	Count  int
	MaxAge time.Duration
	// Request is the on-demand backup request the rendered config names
	// (contract.KeyRequestBackupID), empty when it names none. Prune pins
	// the first backup to complete under it (see pin.go).
	Request string
}

// Expired returns the backups of all (oldest first, all complete) that
// the retention deletes at now: beyond the newest Count, or finished more
// than MaxAge ago. Pinned backups are never expired and are not counted:
// Count and MaxAge apply to the others, and the newest of those is
// always kept.
func (r Retention) Expired(all []Manifest, now time.Time) []Manifest {
	var kept []Manifest
	for _, m := range all {
		if !m.Pinned {
			kept = append(kept, m)
		}
	}
	var out []Manifest
	for i, m := range kept {
		newer := len(kept) - 1 - i
		if newer == 0 {
			break
		}
		if (r.Count > 0 && newer >= r.Count) || (r.MaxAge > 0 && now.Sub(m.Finished) > r.MaxAge) {
			out = append(out, m)
		}
	}
	return out
}

// Prune deletes what the retention expires among cluster's complete
// backups, and the data of cut-off backups (no manifest) that started
// before the newest complete one. It is called only after a backup
// completed, so there is always a newer complete backup than anything it
// deletes. If any manifest cannot be read, it deletes nothing: a backup it
// cannot see is never taken for a leftover. Nor does it delete anything
// when the request's backup cannot be pinned. A backup's manifest goes
// before its data, so a half-done delete leaves a leftover, not a
// manifest whose data is gone.
func Prune(ctx context.Context, st Store, cluster string, r Retention, now time.Time) ([]string, error) {
	all, err := List(ctx, st, cluster)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	if err := pinRequest(ctx, st, all, r.Request); err != nil {
		return nil, err
	}
	newest := all[len(all)-1]
	var deleted []string
	var errs []error
	expired := r.Expired(all, now)
	for _, m := range expired {
		if err := deleteBackup(ctx, st, cluster, m.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, m.ID)
	}
	// WAL goes only after every expired backup did: a backup whose delete
	// failed may still be restored, with its WAL.
	if len(errs) == 0 && newest.Postgres != nil {
		kept := slices.DeleteFunc(slices.Clone(all), func(m Manifest) bool { return slices.Contains(deleted, m.ID) })
		if _, err := PruneWAL(ctx, st, cluster, kept); err != nil {
			errs = append(errs, fmt.Errorf("WAL retention of %s: %w", cluster, err))
		}
	}
	keys, err := st.List(ctx, cluster+"/")
	if err != nil {
		return deleted, errors.Join(append(errs, err)...)
	}
	manifests := map[string]bool{}
	for _, k := range keys {
		if id, ok := strings.CutSuffix(strings.TrimPrefix(k, cluster+"/"), "/"+manifestObject); ok {
			manifests[id] = true
		}
	}
	for _, k := range keys {
		id, _, _ := strings.Cut(strings.TrimPrefix(k, cluster+"/"), "/")
		// IDs sort by start time: a backup without a manifest that started
		// before the newest complete one was cut off and never completes.
		if !manifests[id] && id < newest.ID {
			if err := st.Delete(ctx, k); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return deleted, errors.Join(errs...)
}

func deleteBackup(ctx context.Context, st Store, cluster, id string) error {
	if err := st.Delete(ctx, Key(cluster, id)+"/"+manifestObject); err != nil {
		return err
	}
	return st.Delete(ctx, Key(cluster, id)+"/"+dataObject)
}
