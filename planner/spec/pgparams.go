package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// spec.postgresql.parameters is an allow-list: a parameter is accepted
// only when PostgreSQL knows it (pgParams, PostgreSQL 15's, with the
// majors' differences in pgAdded and pgRemoved), it is not refused here
// with a reason (refusedParameters), and its value has the parameter's
// type. A parameter that runs a program, loads code, includes a file or
// names a path on the server is refused, whatever its value: a spec is
// reviewed as configuration, and must never become a way to run code in
// the database pods.

// pgType is a PostgreSQL parameter's type, as pg_settings.vartype.
type pgType uint8

const (
	pgBool pgType = iota + 1
	pgInt
	pgReal
	pgString
	pgEnum
	// pgReadOnly is a preset (pg_settings.context internal): PostgreSQL
	// refuses it in postgresql.conf.
	pgReadOnly
)

// pgParam is what PostgreSQL accepts for one parameter.
type pgParam struct {
	typ pgType
	// unit is the base unit of a number ("kB", "8kB", "MB", "B", "ms",
	// "s", "min"); a value without a unit is in it.
	unit string
	// min and max bound a number, in its base unit.
	min, max float64
	// enum lists an enum's values, comma-separated.
	enum string
}

// Reasons a parameter is refused.
const (
	whyCommand = "runs a shell command on the database server"
	whyLibrary = "loads a library (code) into the server"
	whyPath    = "names a file or directory on the server"
	whyManaged = "is managed by cairn"
)

// refusedParameters are the parameters a spec may not set, with why. The
// names of commands, libraries and paths PostgreSQL adds later are caught
// by their suffix as well (refusedBySuffix).
var refusedParameters = map[string]string{
	// Programs and code.
	"archive_cleanup_command":                whyCommand,
	"archive_command":                        whyCommand + "; cairn's runtime archives WAL itself",
	"recovery_end_command":                   whyCommand,
	"restore_command":                        whyCommand + "; cairn's restores set it",
	"ssl_passphrase_command":                 whyCommand,
	"ssl_passphrase_command_supports_reload": "goes with ssl_passphrase_command, which " + whyCommand,
	"archive_library":                        whyLibrary,
	"shared_preload_libraries":               whyLibrary,
	"local_preload_libraries":                whyLibrary,
	"session_preload_libraries":              whyLibrary,
	"output_plugin_libraries":                "names the libraries (code) the server loads as logical decoding output plugins",
	"jit_provider":                           whyLibrary + " (the JIT provider)",
	"dynamic_library_path":                   "says where the server loads libraries (code) from",
	"extension_destdir":                      "says where the server loads extensions (SQL and libraries) from",
	"include":                                "includes another file into postgresql.conf",
	"include_dir":                            "includes other files into postgresql.conf",
	"include_if_exists":                      "includes another file into postgresql.conf",
	// Paths.
	"config_file":             whyPath + "; cairn renders postgresql.conf",
	"data_directory":          whyPath + "; cairn sets the data directory",
	"hba_file":                whyPath + "; cairn renders pg_hba.conf",
	"ident_file":              whyPath,
	"external_pid_file":       whyPath,
	"krb_server_keyfile":      whyPath,
	"log_directory":           whyPath,
	"promote_trigger_file":    whyPath,
	"stats_temp_directory":    whyPath,
	"ssl_ca_file":             whyPath + "; cairn sets up TLS",
	"ssl_cert_file":           whyPath + "; cairn sets up TLS",
	"ssl_key_file":            whyPath + "; cairn sets up TLS",
	"ssl_crl_file":            whyPath + "; cairn sets up TLS",
	"ssl_crl_dir":             whyPath + "; cairn sets up TLS",
	"ssl_dh_params_file":      whyPath + "; cairn sets up TLS",
	"unix_socket_directories": whyPath + "; cairn's instance manager uses the socket",
	"unix_socket_group":       "sets who may use the local socket, which cairn's pg_hba trusts; " + whyManaged,
	"unix_socket_permissions": "sets who may use the local socket, which cairn's pg_hba trusts; " + whyManaged,
	// Settings cairn or its runtime set.
	"archive_mode":                 whyManaged + " (backups)",
	"cluster_name":                 whyManaged,
	"hot_standby":                  whyManaged + " (replication)",
	"listen_addresses":             whyManaged,
	"password_encryption":          whyManaged + ": passwords are stored as SCRAM",
	"port":                         whyManaged,
	"primary_conninfo":             whyManaged + " (the runtime points replicas at the primary)",
	"primary_slot_name":            whyManaged + " (replication)",
	"ssl":                          whyManaged + " (TLS)",
	"ssl_ciphers":                  "chooses the TLS ciphers, null ones included; cairn keeps OpenSSL's defaults",
	"ssl_ecdh_curve":               whyManaged + " (TLS)",
	"synchronous_commit":           whyManaged + " (set spec.synchronousStandbys)",
	"synchronous_standby_names":    whyManaged + " (set spec.synchronousStandbys)",
	"wal_level":                    whyManaged + " (replication)",
	"wal_receiver_status_interval": whyManaged + " (a primary's failsafe counts the standbys' replies)",
	"recovery_target":              whyManaged + " (restores)",
	"recovery_target_action":       whyManaged + " (restores)",
	"recovery_target_inclusive":    whyManaged + " (restores)",
	"recovery_target_lsn":          whyManaged + " (restores)",
	"recovery_target_name":         whyManaged + " (restores)",
	"recovery_target_time":         whyManaged + " (restores)",
	"recovery_target_timeline":     whyManaged + " (restores and failover follow the latest timeline)",
	"recovery_target_xid":          whyManaged + " (restores)",
}

// refusedBySuffix catches commands, libraries and paths by their name's
// end, for a parameter outside PostgreSQL 15's table (pgAdded, or one a
// later PostgreSQL adds before this list knows it). PostgreSQL 15's own
// are all listed above by name (search_path is not a file path).
var refusedBySuffix = []struct{ suffix, why string }{
	{"_command", whyCommand}, {"_library", whyLibrary}, {"_libraries", whyLibrary},
	{"_path", whyPath}, {"_file", whyPath}, {"_dir", whyPath}, {"_directory", whyPath}, {"_directories", whyPath},
}

// extensionPrefixes are the extensions whose parameters (prefix.name) a
// spec may set: PostgreSQL's own contrib modules whose parameters are
// all plain settings and take effect without a library loaded at start
// (pg_trgm and plpgsql load when first used). Any other extension's may
// be code (plperl.on_init runs Perl) or a path, so they are refused, and
// so are those of preloadOnly.
var extensionPrefixes = []string{"pg_trgm", "plpgsql"}

// preloadOnly are contrib modules whose parameters take effect only in a
// server or session that loaded the module's library
// (shared_preload_libraries, session_preload_libraries, LOAD), with what
// each does then. A spec cannot set those libraries and cairn loads none,
// so the parameters would change nothing: they are refused, saying so,
// rather than shown as a change in a pull request that does nothing.
var preloadOnly = map[string]string{
	"auto_explain":       "logs the plans of slow statements",
	"pg_prewarm":         "runs the autoprewarm worker",
	"pg_stat_statements": "tracks statement statistics",
}

// pgCaps lower a parameter's maximum below PostgreSQL's where the server
// checks more than the range at start: max_stack_depth may not exceed
// the stack limit (8 MB in a container) less 512 kB, and the backends
// (connections, autovacuum workers, worker processes, WAL senders)
// together may not exceed 262143.
var pgCaps = map[string]float64{
	"max_stack_depth": 7680, "max_connections": 100_000, "autovacuum_max_workers": 10_000,
	"max_worker_processes": 10_000, "max_wal_senders": 10_000,
}

// valueChecks are checks of a string value beyond its type: paths kept
// out of a file name, and the list syntax PostgreSQL parses at start, so
// a value it would refuse never reaches a server's restart.
var valueChecks = map[string]func(v string, major int) string{
	"log_filename": func(v string, _ int) string {
		if strings.ContainsAny(v, `/\`) {
			return "must be a file name without / (a path would write logs outside the log directory)"
		}
		return ""
	},
	"search_path": func(v string, _ int) string { return checkIdentifiers(v, nil) },
	// TLS versions only at or above cairn's floor (TLS 1.2).
	"ssl_min_protocol_version": func(v string, _ int) string { return tlsAtFloor(v, false) },
	"ssl_max_protocol_version": func(v string, _ int) string { return tlsAtFloor(v, true) },
	"temp_tablespaces":         func(v string, _ int) string { return checkIdentifiers(v, nil) },
	"log_destination": func(v string, major int) string {
		dests := []string{"stderr", "csvlog", "syslog"}
		if major == 0 || major >= 15 {
			dests = append(dests, "jsonlog")
		}
		return checkIdentifiers(v, dests)
	},
}

// tlsAtFloor refuses a TLS version below cairn's floor, TLS 1.2, that
// PostgreSQL would negotiate down to; none (an empty maximum) only when
// it is a maximum.
func tlsAtFloor(v string, isMax bool) string {
	v = strings.Trim(strings.TrimSpace(v), "'")
	if v == "" && isMax {
		return ""
	}
	for _, ok := range []string{"TLSv1.2", "TLSv1.3"} {
		if strings.EqualFold(v, ok) {
			return ""
		}
	}
	return fmt.Sprintf("must be TLSv1.2 or TLSv1.3, got %q: cairn serves TLS 1.2 and above (TLS 1.0 and 1.1 are broken)", v)
}

// checkParameter returns why name = value cannot be set on a server of
// the given major version (0 when unknown), or "" when it can.
func checkParameter(name, value string, major int) string {
	if why, ok := refusedParameters[name]; ok {
		return name + " " + why + "; it cannot be set in a spec"
	}
	if strings.HasPrefix(name, "include") {
		return name + " includes other files into postgresql.conf; it cannot be set in a spec"
	}
	if prefix, _, custom := strings.Cut(name, "."); custom {
		if does, ok := preloadOnly[prefix]; ok {
			return fmt.Sprintf("%s has no effect: %s %s only once its library is loaded (shared_preload_libraries), which a spec cannot set and cairn does not; leave it out",
				name, prefix, does)
		}
		if !slices.Contains(extensionPrefixes, prefix) {
			return fmt.Sprintf("%s is a parameter of the extension %s; a spec may set only those of %s (another extension's parameter may run code or name a path)",
				name, prefix, strings.Join(extensionPrefixes, ", "))
		}
		return checkValue(pgParam{typ: pgString}, value)
	}
	if _, known := pgParams[name]; !known {
		for _, s := range refusedBySuffix {
			if strings.HasSuffix(name, s.suffix) {
				return name + " " + s.why + "; it cannot be set in a spec"
			}
		}
	}
	p, why := lookupParameter(name, major)
	if why != "" {
		return why
	}
	if p.typ == pgReadOnly {
		return name + " is read-only: PostgreSQL sets it when it is built or initialised"
	}
	if why := checkValue(p, value); why != "" {
		return why
	}
	if check := valueChecks[name]; check != nil {
		if why := check(value, major); why != "" {
			return name + " " + why
		}
	}
	return ""
}

// CheckParameter reports whether spec.postgresql.parameters may set name
// to value for a server of the given major version (0: any), and why
// not, as validation does.
func CheckParameter(name, value string, major int) error {
	if !paramNameRE.MatchString(name) {
		return fmt.Errorf("%s is not a PostgreSQL parameter name", strictyaml.Quote(name))
	}
	if err := checkParamText(value); err != nil {
		return err
	}
	if why := checkParameter(name, value, major); why != "" {
		return fmt.Errorf("%s", why)
	}
	return nil
}

// lookupParameter returns what PostgreSQL of the given major accepts for
// name.
func lookupParameter(name string, major int) (pgParam, string) {
	p, ok := pgParams[name]
	if !ok {
		a, added := pgAdded[name]
		if !added {
			return pgParam{}, fmt.Sprintf("%s is not a PostgreSQL parameter cairn knows (check the spelling; parameters are lowercase)", name)
		}
		if major != 0 && major < a.since {
			return pgParam{}, fmt.Sprintf("%s is a parameter of PostgreSQL %d and later, not of %d", name, a.since, major)
		}
		p = a.pgParam
	}
	if until, ok := pgRemoved[name]; ok && major >= until {
		return pgParam{}, fmt.Sprintf("%s was removed in PostgreSQL %d", name, until)
	}
	if since, ok := pgSince[name]; ok && major != 0 && major < since {
		return pgParam{}, fmt.Sprintf("%s is a parameter of PostgreSQL %d and later, not of %d", name, since, major)
	}
	if old, ok := pgBefore15[name]; ok && major != 0 && major < 15 {
		p = old
	}
	if m, ok := pgCaps[name]; ok {
		p.max = m
	}
	return p, ""
}
