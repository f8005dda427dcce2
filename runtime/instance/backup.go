package instance

import (
	"context"
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
)

// FindBackup opens the restore's location and finds its backup: the
// newest before its Target when it names a time and the latest backup,
// else the one it names.
func FindBackup(ctx context.Context, r *Restore) (backup.Store, backup.Manifest, error) {
	// The pod's environment gives the S3 settings (the optional
	// <cluster>-backup Secret).
	st, err := backup.OpenFromEnv(r.Location)
	if err != nil {
		return nil, backup.Manifest{}, fmt.Errorf("restore: %w", err)
	}
	var m backup.Manifest
	if t, terr := backup.ParseTarget(r.Target); terr == nil && !t.IsZero() && r.Backup == contract.RestoreLatest {
		m, err = backup.FindBefore(ctx, st, r.Cluster, t)
	} else {
		m, err = backup.Find(ctx, st, r.Cluster, r.Backup)
	}
	if err != nil {
		return nil, backup.Manifest{}, fmt.Errorf("restore: %w", err)
	}
	return st, m, nil
}
