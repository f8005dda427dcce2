package spec

// When a changed PostgreSQL parameter takes effect. pg_settings.context
// says it: "postmaster" parameters only when the server starts, all
// others on a reload (sighup) or at once (user, superuser, backend ...).
// The postmaster set below is PostgreSQL 15's
// (TestRestartParametersArePostgres15s checks it against the real
// server's postgres --describe-config); the entries that differ by major
// version are in restartByMajor.

// restartParams are the parameters of context postmaster in PostgreSQL 15.
var restartParams = map[string]bool{
	"archive_mode": true, "autovacuum_freeze_max_age": true, "autovacuum_max_workers": true,
	"autovacuum_multixact_freeze_max_age": true, "bonjour": true, "bonjour_name": true,
	"cluster_name": true, "data_directory": true, "data_sync_retry": true,
	"dynamic_shared_memory_type": true, "event_source": true, "external_pid_file": true,
	"hba_file": true, "hot_standby": true, "huge_page_size": true, "huge_pages": true,
	"ident_file": true, "jit_provider": true, "listen_addresses": true, "logging_collector": true,
	"max_connections": true, "max_files_per_process": true, "max_locks_per_transaction": true,
	"max_logical_replication_workers": true, "max_pred_locks_per_transaction": true,
	"max_prepared_transactions": true, "max_replication_slots": true, "max_wal_senders": true,
	"max_worker_processes": true, "min_dynamic_shared_memory": true, "old_snapshot_threshold": true,
	"port": true, "recovery_target": true, "recovery_target_action": true,
	"recovery_target_inclusive": true, "recovery_target_lsn": true, "recovery_target_name": true,
	"recovery_target_time": true, "recovery_target_timeline": true, "recovery_target_xid": true,
	"shared_buffers": true, "shared_memory_type": true, "shared_preload_libraries": true,
	"superuser_reserved_connections": true, "track_activity_query_size": true,
	"track_commit_timestamp": true, "unix_socket_directories": true, "unix_socket_group": true,
	"unix_socket_permissions": true, "wal_buffers": true, "wal_decode_buffer_size": true,
	"wal_level": true, "wal_log_hints": true,
}

// restartByMajor are the parameters whose context is not PostgreSQL 15's
// in some major version: from that major on, a reload applies them
// (PostgreSQL 18 release notes: autovacuum_max_workers can be changed
// with a reload, up to the new autovacuum_worker_slots).
var restartByMajor = map[string]struct{ reloadFrom int }{
	"autovacuum_max_workers": {reloadFrom: 18},
}

// hotStandbyParams must be at least as high on a standby as on its
// primary, or the standby stops replaying WAL (PostgreSQL documentation,
// "Hot Standby", Administrator's Overview: max_connections,
// max_prepared_transactions, max_locks_per_transaction, max_wal_senders,
// max_worker_processes). So they are raised on the standbys first and
// lowered on the primary first.
var hotStandbyParams = map[string]bool{
	"max_connections": true, "max_prepared_transactions": true, "max_locks_per_transaction": true,
	"max_wal_senders": true, "max_worker_processes": true,
}

// ParameterNeedsRestart reports whether a change of parameter name takes
// effect only when the server restarts, in PostgreSQL major.
func ParameterNeedsRestart(name string, major int) bool {
	if v, ok := restartByMajor[name]; ok && major >= v.reloadFrom {
		return false
	}
	return restartParams[name]
}

// HotStandbyParameter reports whether a standby needs parameter name at
// least as high as its primary's.
func HotStandbyParameter(name string) bool { return hotStandbyParams[name] }
