package main

import (
	"context"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// postgresRestorer unpacks a PostgreSQL base backup; --target-time
// prepares the replay of the archived WAL.
var postgresRestorer = restorer{
	pointInTime: true,
	run: func(ctx context.Context, st backup.Store, m backup.Manifest, o restoreOptions) error {
		return backup.RestorePostgres(ctx, st, m, backup.PostgresRestore{DataDir: o.dataDir})
	},
	example: `  # the latest PostgreSQL backup into a new data directory
  cairn restore --location s3://my-backup-bucket/postgres --cluster my-production-db --kind PostgresCluster --data-dir /var/lib/restore/pgdata

  # as it was at 14:05 UTC, replaying the archived WAL when PostgreSQL starts
  cairn restore --location s3://my-backup-bucket/postgres --cluster my-production-db --kind PostgresCluster --data-dir /var/lib/restore/pgdata \
    --target-time 2026-11-30T14:05:00Z`,
}
