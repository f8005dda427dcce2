// Package wal is the protocol between PostgreSQL's archive_command and
// restore_command (`cairn instance wal push|fetch %f %p`) and the member's
// instance manager, which archives and fetches WAL for them over a Unix
// socket (runtime/instance/postgres.WALServer): one JSON line each way.
//
// It imports nothing of cairn's, so the client PostgreSQL runs for every
// segment stays small.
package wal
