package backup

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Retention says which complete backups to keep. Zero values keep all.
type Retention struct {
	Count  int
	MaxAge time.Duration
}

// Expired returns the backups of all (oldest first, all complete) that
// the retention deletes at now: beyond the newest Count, or finished more
// than MaxAge ago. The newest is always kept.
func (r Retention) Expired(all []Manifest, now time.Time) []Manifest {
	var out []Manifest
	for i, m := range all {
		newer := len(all) - 1 - i
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
// backups, and the leftovers of cut-off backups older than the newest
// complete one. It is called only after a backup completed, so there is
// always a newer complete backup than anything it deletes. Data goes
// before the manifest, so a half-done delete never leaves a manifest
// without its data... except that List then skips it, and the next prune
// removes it.
func Prune(ctx context.Context, st Store, cluster string, r Retention, now time.Time) ([]string, error) {
	all, err := List(ctx, st, cluster)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	newest := all[len(all)-1]
	var deleted []string
	var errs []error
	for _, m := range r.Expired(all, now) {
		if err := deleteBackup(ctx, st, cluster, m.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, m.ID)
	}
	complete := map[string]bool{}
	for _, m := range all {
		complete[m.ID] = true
	}
	keys, err := st.List(ctx, cluster+"/")
	if err != nil {
		return deleted, errors.Join(append(errs, err)...)
	}
	for _, k := range keys {
		id, _, _ := strings.Cut(strings.TrimPrefix(k, cluster+"/"), "/")
		// IDs sort by start time: a leftover that started before the newest
		// complete backup will never complete.
		if !complete[id] && id < newest.ID {
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
