// Package backup takes, keeps and restores cairn's backups of PostgreSQL
// and etcd clusters, in S3-compatible object storage or a file:// folder.
//
// A backup is two objects under <location>/<cluster>/<id>/: data, streamed
// from the database as it is read (never staged on local disk), and
// manifest.json, written last, which records its size, checksum, start and
// end, source member and versions. A backup is complete only when its
// manifest is there and agrees with its data: an upload cut off halfway
// leaves nothing that looks complete. Retention deletes old complete
// backups only after a newer one is complete, never the newest, and never
// a pinned one: the backup a TakeBackup step asked for, which a plan's
// rollback restores, is kept until a person releases it (pin.go).
//
// Sources: an etcd snapshot through the etcd client (Maintenance.Snapshot),
// and a PostgreSQL base backup through the streaming replication protocol
// (BASE_BACKUP, as pg_basebackup -Ft -X fetch takes it: one tar holding the
// data directory and the WAL that makes it consistent).
//
// Imports: planner/spec (the kinds a manifest names, the schedule parser)
// and planner/contract (the ConfigMap's backup keys), the etcd client and
// etcdutl, pgx, minio-go; never the planner's core, the renderer or the
// publisher.
package backup
