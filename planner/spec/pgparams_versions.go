package spec

import "math"

// The parameters of the majors cairn runs differ from PostgreSQL 15's
// (pgParams) by these lists, from the release notes of each major. A
// parameter set for a major that lacks it stops the server at start, so
// it is refused at validation instead.

// pgSince are parameters of PostgreSQL 15's table that older majors lack,
// with the first major that has them.
var pgSince = map[string]int{
	"client_connection_check_interval": 14, "compute_query_id": 14, "debug_discard_caches": 14,
	"default_toast_compression": 14, "enable_async_append": 14, "enable_memoize": 14,
	"huge_page_size": 14, "idle_session_timeout": 14, "log_recovery_conflict_waits": 14,
	"min_dynamic_shared_memory": 14, "recovery_init_sync_method": 14, "remove_temp_files_after_crash": 14,
	"track_wal_io_timing": 14, "vacuum_failsafe_age": 14, "vacuum_multixact_failsafe_age": 14,
	"log_startup_progress_interval": 15, "recovery_prefetch": 15, "recursive_worktable_factor": 15,
	"stats_fetch_consistency": 15, "wal_decode_buffer_size": 15,
}

// pgRemoved are parameters a later major removed, with that major.
var pgRemoved = map[string]int{
	"operator_precedence_warning": 14, "vacuum_cleanup_index_scale_factor": 14,
	"force_parallel_mode": 16, "vacuum_defer_cleanup_age": 16,
	"db_user_namespace": 17, "old_snapshot_threshold": 17, "trace_recovery_messages": 17,
	"logical_replication_mode": 17,
}

// pgBefore15 are parameters whose type changed in PostgreSQL 15.
var pgBefore15 = map[string]pgParam{
	"wal_compression": {typ: pgBool},
}

// addedParam is a parameter outside PostgreSQL 15's table.
type addedParam struct {
	pgParam
	since int
}

const intMax = math.MaxInt32

// pgAdded are the parameters of majors other than 15 that PostgreSQL 15
// lacks: those of 13 it removed, and those 16 and 17 added.
var pgAdded = map[string]addedParam{
	"operator_precedence_warning":       {pgParam{typ: pgBool}, 13},
	"vacuum_cleanup_index_scale_factor": {pgParam{typ: pgReal, min: 0, max: 1e10}, 13},

	"createrole_self_grant":                       {pgParam{typ: pgString}, 16},
	"debug_io_direct":                             {pgParam{typ: pgString}, 16},
	"debug_parallel_query":                        {pgParam{typ: pgEnum, enum: "off,on,regress"}, 16},
	"enable_presorted_aggregate":                  {pgParam{typ: pgBool}, 16},
	"gss_accept_delegation":                       {pgParam{typ: pgBool}, 16},
	"icu_validation_level":                        {pgParam{typ: pgEnum, enum: "disabled,debug5,debug4,debug3,debug2,debug1,log,notice,warning,error"}, 16},
	"logical_replication_mode":                    {pgParam{typ: pgEnum, enum: "buffered,immediate"}, 16},
	"max_parallel_apply_workers_per_subscription": {pgParam{typ: pgInt, min: 0, max: 1024}, 16},
	"reserved_connections":                        {pgParam{typ: pgInt, min: 0, max: 262143}, 16},
	"scram_iterations":                            {pgParam{typ: pgInt, min: 1, max: intMax}, 16},
	"send_abort_for_crash":                        {pgParam{typ: pgBool}, 16},
	"send_abort_for_kill":                         {pgParam{typ: pgBool}, 16},
	"vacuum_buffer_usage_limit":                   {pgParam{typ: pgInt, unit: "kB", min: 128, max: 16777216}, 16},
	"allow_alter_system":                          {pgParam{typ: pgBool}, 17},
	"commit_timestamp_buffers":                    {pgParam{typ: pgInt, unit: "8kB", min: 0, max: 131072}, 17},
	"debug_logical_replication_streaming":         {pgParam{typ: pgEnum, enum: "buffered,immediate"}, 17},
	"enable_group_by_reordering":                  {pgParam{typ: pgBool}, 17},
	"event_triggers":                              {pgParam{typ: pgBool}, 17},
	"huge_pages_status":                           {pgParam{typ: pgReadOnly}, 17},
	"io_combine_limit":                            {pgParam{typ: pgInt, unit: "8kB", min: 1, max: 32}, 17},
	"max_notify_queue_pages":                      {pgParam{typ: pgInt, min: 64, max: intMax}, 17},
	"multixact_member_buffers":                    {pgParam{typ: pgInt, unit: "8kB", min: 16, max: 131072}, 17},
	"multixact_offset_buffers":                    {pgParam{typ: pgInt, unit: "8kB", min: 16, max: 131072}, 17},
	"notify_buffers":                              {pgParam{typ: pgInt, unit: "8kB", min: 16, max: 131072}, 17},
	"serializable_buffers":                        {pgParam{typ: pgInt, unit: "8kB", min: 16, max: 131072}, 17},
	"subtransaction_buffers":                      {pgParam{typ: pgInt, unit: "8kB", min: 0, max: 131072}, 17},
	"summarize_wal":                               {pgParam{typ: pgBool}, 17},
	"sync_replication_slots":                      {pgParam{typ: pgBool}, 17},
	"synchronized_standby_slots":                  {pgParam{typ: pgString}, 17},
	"trace_connection_negotiation":                {pgParam{typ: pgBool}, 17},
	"transaction_buffers":                         {pgParam{typ: pgInt, unit: "8kB", min: 0, max: 131072}, 17},
	"transaction_timeout":                         {pgParam{typ: pgInt, unit: "ms", min: 0, max: intMax}, 17},
	"wal_summary_keep_time":                       {pgParam{typ: pgInt, unit: "min", min: 0, max: 35791394}, 17},
}
