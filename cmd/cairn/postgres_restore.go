package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// postgresRestorer unpacks a PostgreSQL base backup; --target-time
// prepares the replay of the archived WAL.
var postgresRestorer = restorer{
	pointInTime: true,
	run: func(ctx context.Context, w io.Writer, st backup.Store, m backup.Manifest, o restoreOptions) error {
		r := backup.PostgresRestore{DataDir: o.dataDir}
		if o.target != "" {
			// In the copy before it is put in place: a data directory
			// never exists without its recovery settings.
			r.Finish = func(dir string) error { return writeRecovery(dir, o, m) }
		}
		out, err := backup.RestorePostgres(ctx, st, m, r)
		if err == nil && len(out.Dropped) > 0 {
			fmt.Fprintf(w, "left out %d entries of the backup outside PostgreSQL's data layout (its configuration files among them; fresh ones were written): %s\n",
				len(out.Dropped), droppedList(out.Dropped))
		}
		return err
	},
	example: `  # the latest PostgreSQL backup into a new data directory
  cairn restore --location s3://my-backup-bucket/postgres --cluster my-production-db --kind PostgresCluster --data-dir /var/lib/restore/pgdata

  # as it was at 14:05 UTC, replaying the archived WAL when PostgreSQL starts
  cairn restore --location s3://my-backup-bucket/postgres --cluster my-production-db --kind PostgresCluster --data-dir /var/lib/restore/pgdata \
    --target-time 2026-11-30T14:05:00Z`,
}

// droppedList names at most 10 of the entries a restore left out.
func droppedList(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}
