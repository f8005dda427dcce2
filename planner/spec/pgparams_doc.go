package spec

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// writeParameters is the reference page's section on
// spec.postgresql.parameters: the rules, and every refused parameter
// with its reason.
func writeParameters(b *bytes.Buffer) {
	b.WriteString("\n## PostgreSQL parameters\n\n")
	b.WriteString("`spec.postgresql.parameters` is an allow-list. A parameter is accepted when PostgreSQL knows it ")
	b.WriteString("(PostgreSQL 15's parameters, and those other majors add or remove, checked against `spec.version`), ")
	b.WriteString("it is not refused below, and its value has the parameter's type: a boolean, an integer or a number ")
	b.WriteString("in its range with an optional unit (`256MB`, `30s`; units are case-sensitive), or one of an enum's values. ")
	b.WriteString("Every value is one line of printable text of at most ")
	fmt.Fprintf(b, "%d characters, and is written to `postgresql.conf` quoted (quotes doubled, backslashes escaped). ", maxParamValue)
	b.WriteString("Read-only presets (`block_size`, `server_version`, ...) are refused, and `log_filename` may not hold a `/`.\n\n")
	fmt.Fprintf(b, "Parameters of extensions (`prefix.name`) are accepted for %s only: another extension's parameter may run code (`plperl.on_init` runs Perl) or name a path. ",
		"`"+strings.Join(extensionPrefixes, "`, `")+"`")
	fmt.Fprintf(b, "Those of %s are refused: they take effect only once the module's library is loaded (`shared_preload_libraries`), which a spec cannot set and cairn does not, so they would change nothing.\n\n",
		"`"+strings.Join(slices.Sorted(maps.Keys(preloadOnly)), "`, `")+"`")
	b.WriteString("A parameter that runs a program, loads code, includes a file or names a path on the server is refused ")
	b.WriteString("whatever its value, as is one cairn sets itself. ")
	suffixes := make([]string, len(refusedBySuffix))
	for i, s := range refusedBySuffix {
		suffixes[i] = "`*" + s.suffix + "`"
	}
	fmt.Fprintf(b, "Outside PostgreSQL 15's parameters, names ending in %s and names starting with `include` are refused too.\n\n", strings.Join(suffixes, ", "))
	b.WriteString("| Parameter | Refused: it |\n|---|---|\n")
	for _, name := range slices.Sorted(maps.Keys(refusedParameters)) {
		fmt.Fprintf(b, "| `%s` | %s |\n", name, cell(refusedParameters[name]))
	}
}
