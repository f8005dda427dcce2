package spec

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// paramDoc is a PostgresCluster of the given version setting one
// parameter, written on line 11 at column 7.
func paramDoc(version, name, value string) string {
	return sub(pgHead, `"14.5"`, strconv.Quote(version)) + "  postgresql:\n    parameters:\n      " + name + ": " + value + "\n"
}

// TestEveryRefusedParameterSaysWhy: each entry of the deny-list is refused
// at its file:line:col, naming the parameter and the entry's reason,
// whatever the value.
func TestEveryRefusedParameterSaysWhy(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(refusedParameters)) {
		t.Run(name, func(t *testing.T) {
			_, err := Decode("f.yaml", []byte(paramDoc("15.4", name, "'on'")))
			want := fmt.Sprintf("f.yaml:11:%d: spec.postgresql.parameters.%s: %s %s; it cannot be set in a spec", 9+len(name), name, name, refusedParameters[name])
			if err == nil || err.Error() != want {
				t.Errorf("error:\ngot  %v\nwant %s", err, want)
			}
		})
	}
}

func TestParameters(t *testing.T) {
	for _, tc := range []struct {
		name, value, version string
		want                 string // a substring of the error; "" when accepted
	}{
		{"max_connections", "200", "15.4", ""},
		{"shared_buffers", "1GB", "15.4", ""},
		// TLS: never below cairn's floor, TLS 1.2.
		{"ssl_min_protocol_version", "TLSv1.3", "15.4", ""},
		{"ssl_min_protocol_version", "'tlsv1.2'", "15.4", ""},
		{"ssl_min_protocol_version", "TLSv1", "15.4", "must be TLSv1.2 or TLSv1.3"},
		{"ssl_min_protocol_version", "TLSv1.1", "15.4", "must be TLSv1.2 or TLSv1.3"},
		{"ssl_max_protocol_version", "TLSv1.1", "15.4", "must be TLSv1.2 or TLSv1.3"},
		{"ssl_max_protocol_version", "''", "15.4", ""},
		{"ssl_max_protocol_version", "TLSv1.3", "15.4", ""},
		{"ssl_ciphers", "'eNULL'", "15.4", "it cannot be set in a spec"},
		{"ssl_ciphers", "'HIGH:!aNULL'", "15.4", "it cannot be set in a spec"},
		{"ssl_ecdh_curve", "prime256v1", "15.4", "it cannot be set in a spec"},
		{"work_mem", "1.5MB", "15.4", ""},
		{"work_mem", "64 kB", "15.4", ""},
		{"work_mem", "63kB", "15.4", `"63kB" is outside the valid range 64 to 2147483647 kB`},
		{"work_mem", "4mb", "15.4", `unknown unit "mb" (units are case-sensitive)`},
		{"work_mem", "0x10", "15.4", "must be an integer with an optional unit (TB, GB, MB, kB, B)"},
		{"work_mem", "010", "15.4", "must be an integer"},
		{"work_mem", "1e3", "15.4", "must be an integer"},
		{"max_connections", "10s", "15.4", "this parameter takes no unit"},
		{"max_connections", "99999999999", "15.4", "out of range"},
		{"statement_timeout", "30s", "15.4", ""},
		{"statement_timeout", "1d", "15.4", ""},
		{"statement_timeout", "25d", "15.4", `"25d" is out of range`},
		{"statement_timeout", "-1", "15.4", "outside the valid range 0 to 2147483647 ms"},
		{"random_page_cost", "1.1", "15.4", ""},
		{"random_page_cost", "1e2", "15.4", ""},
		{"random_page_cost", "-1", "15.4", "outside the valid range 0 to any"},
		{"random_page_cost", "NaN", "15.4", "must be a number"},
		{"vacuum_cost_delay", "2ms", "15.4", ""},
		{"enable_seqscan", "off", "15.4", ""},
		{"enable_seqscan", "TRUE", "15.4", ""},
		{"enable_seqscan", "maybe", "15.4", "must be a boolean"},
		{"huge_pages", "try", "15.4", ""},
		{"huge_pages", "true", "15.4", ""},
		{"bytea_output", "hex", "15.4", ""},
		{"bytea_output", "on", "15.4", "must be one of escape, hex"},
		{"default_transaction_isolation", "'repeatable read'", "15.4", ""},
		{"search_path", `'"$user", public'`, "15.4", ""},
		{"log_line_prefix", `'%m [%p] \ '' '`, "15.4", ""},
		{"log_filename", "postgresql-%a.log", "15.4", ""},
		{"log_filename", "../../postgresql.auto.conf", "15.4", "must be a file name without /"},
		{"application_name", `"a\tb"`, "15.4", "holds U+0009"},
		{"application_name", `"a\u2028b"`, "15.4", "holds U+2028"},
		{"block_size", "8192", "15.4", "block_size is read-only"},
		{"max_conections", "100", "15.4", "max_conections is not a PostgreSQL parameter cairn knows"},
		{"wal_compression", "lz4", "15.4", ""},
		{"wal_compression", "lz4", "14.5", "must be a boolean"},
		{"compute_query_id", "on", "14.5", ""},
		{"compute_query_id", "on", "13.9", "compute_query_id is a parameter of PostgreSQL 14 and later, not of 13"},
		{"transaction_timeout", "5min", "17.2", ""},
		{"transaction_timeout", "5min", "16.3", "a parameter of PostgreSQL 17 and later"},
		{"old_snapshot_threshold", "1h", "17.2", "old_snapshot_threshold was removed in PostgreSQL 17"},
		{"operator_precedence_warning", "on", "13.9", ""},
		{"operator_precedence_warning", "on", "14.5", "removed in PostgreSQL 14"},
		{"pg_trgm.similarity_threshold", "0.4", "15.4", ""},
		{"plpgsql.variable_conflict", "use_column", "15.4", ""},
		{"pg_stat_statements.track", "all", "15.4", "pg_stat_statements.track has no effect: pg_stat_statements tracks statement statistics only once its library is loaded (shared_preload_libraries)"},
		{"pg_stat_statements.max", "10000", "17.2", "which a spec cannot set and cairn does not"},
		{"auto_explain.log_min_duration", "250ms", "15.4", "auto_explain.log_min_duration has no effect: auto_explain logs the plans"},
		{"pg_prewarm.autoprewarm", "on", "13.9", "pg_prewarm.autoprewarm has no effect"},
		{"plperl.on_init", "'system(\"id\")'", "15.4", "is a parameter of the extension plperl; a spec may set only those of pg_trgm, plpgsql"},
		{"basebackup_to_shell.command", "'id'", "15.4", "the extension basebackup_to_shell"},
		{"include_dir", "'conf.d'", "15.4", "includes other files into postgresql.conf"},
		{"includes", "x", "15.4", "includes includes other files"},
		{"archive_cleanup_command", "'rm -rf /'", "15.4", "archive_cleanup_command runs a shell command on the database server"},
		{"shared_preload_libraries", "pg_stat_statements", "15.4", "loads a library (code) into the server"},
		{"future_thing_command", "x", "15.4", "future_thing_command runs a shell command"},
		{"future_thing_path", "x", "15.4", "names a file or directory"},
	} {
		t.Run(tc.name+"="+tc.value+"@"+tc.version, func(t *testing.T) {
			_, err := Decode("f.yaml", []byte(paramDoc(tc.version, tc.name, tc.value)))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			case err != nil && !strings.HasPrefix(err.Error(), "f.yaml:11:") && !strings.HasPrefix(err.Error(), "f.yaml:6:"):
				t.Errorf("error not at the parameter: %v", err)
			}
		})
	}
}

// pgBinary is the PostgreSQL 15 server the tests check the table and the
// writer against.
const pgBinary = "/usr/lib/postgresql/15/bin/postgres"

// TestParameterTableIsPostgres15s checks pgParams against the real
// server's postgres --describe-config: the same names, types and ranges.
// The table's units and enum values came from pg_settings of a running
// PostgreSQL 15:
//
//	select name, vartype, unit, min_val, max_val, enumvals, context from pg_settings order by name
func TestParameterTableIsPostgres15s(t *testing.T) {
	if _, err := os.Stat(pgBinary); err != nil {
		t.Skipf("no PostgreSQL 15: %v", err)
	}
	out, err := exec.Command(pgBinary, "--describe-config").Output()
	if err != nil {
		t.Fatalf("postgres --describe-config: %v", err)
	}
	types := map[string]pgType{"BOOLEAN": pgBool, "INTEGER": pgInt, "REAL": pgReal, "STRING": pgString, "ENUM": pgEnum}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		name, ctx, typ := strings.ToLower(f[0]), f[1], types[f[3]]
		p, ok := pgParams[name]
		n++
		switch {
		case !ok:
			t.Errorf("%s is missing from the table", name)
		case ctx == "internal":
			if p.typ != pgReadOnly {
				t.Errorf("%s is internal, the table says %d", name, p.typ)
			}
		case p.typ != typ:
			t.Errorf("%s is %s, the table says %d", name, f[3], p.typ)
		case typ == pgInt && (f[5] != strconv.FormatFloat(p.min, 'f', -1, 64) || f[6] != strconv.FormatFloat(p.max, 'f', -1, 64)):
			t.Errorf("%s ranges %s..%s, the table says %v..%v", name, f[5], f[6], p.min, p.max)
		}
	}
	if n < 300 {
		t.Errorf("only %d parameters described", n)
	}
}

// TestRestartParametersArePostgres15s checks restartParams against the
// real server: exactly the parameters of context postmaster.
func TestRestartParametersArePostgres15s(t *testing.T) {
	if _, err := os.Stat(pgBinary); err != nil {
		t.Skipf("no PostgreSQL 15: %v", err)
	}
	out, err := exec.Command(pgBinary, "--describe-config").Output()
	if err != nil {
		t.Fatalf("postgres --describe-config: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		name, ctx := strings.ToLower(f[0]), f[1]
		if got, want := ParameterNeedsRestart(name, 15), ctx == "postmaster"; got != want {
			t.Errorf("%s has context %s; ParameterNeedsRestart says %v", name, ctx, got)
		}
		seen[name] = true
	}
	for name := range restartParams {
		if !seen[name] {
			t.Errorf("%s is not a PostgreSQL 15 parameter", name)
		}
	}
	for name := range hotStandbyParams {
		if !ParameterNeedsRestart(name, 15) {
			t.Errorf("hot-standby parameter %s should need a restart", name)
		}
	}
}
