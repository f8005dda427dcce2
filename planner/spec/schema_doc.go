package spec

import (
	"bytes"
	"fmt"
	"strings"
)

// validateOnly are the rules cairn validate checks that the JSON Schemas
// cannot say. The schema corpus (testdata/schema-corpus) holds at least
// one case of each, marked "validate-only <id>", which the schema accepts
// and cairn validate refuses (TestSchemaCorpus here, and
// TestSchemaCorpusAgreesWithValidate in cmd/cairn).
var validateOnly = []struct{ ID, Rule string }{
	{"resources-limit-below-request", "Each of `spec.resources.limits` is at least its request: the quantities are compared by value."},
	{"retention-max-age", "`spec.backup.retention.maxAge` is at least 1h."},
	{"window-duration", "`spec.maintenanceWindow.duration` is at most 7d."},
	{"etcd-space-quota", "`spec.spaceQuota` is 1Mi to 10Gi and, when written, at most half of `spec.storage`."},
	{"compaction-retention", "A periodic `spec.compaction.retention` is at least 1m; a revision one as a string (`\"10000\"`) is at most 1000000000."},
	{"duration-value", "A Go-syntax duration is not zero (`0s`) and does not overflow (`9999999999h`), nor does the one of a cron `@every`."},
	{"cron-range-order", "A cron range does not start after its end (`30-10`)."},
	{"schedule-fires", "A schedule fires at all (not `0 0 30 2 *`, the 30th of February), and an `@every` is at least a second (cron fires at most once a second: `@every 1ns` would run every second)."},
	{"storage-size", "`spec.storage` is 1Gi to 1Pi."},
	{"location-escaped-dots", "A storage location's path holds no percent-encoded `.` or `..` segment (`%2e%2e`)."},
	{"param-string-range", "A PostgreSQL parameter's value written as a string (quoted, or with a unit: `\"200\"`, `64MB`) is in the parameter's range. Written as a number (`200`) the schema checks the range too."},
	{"param-value-bytes", "A parameter's value is at most 1024 bytes; the schema counts 1024 characters."},
	{"yaml-number-form", "A number is written in a form cairn reads as written: `3.0` or `1e3` is not an integer field or a quantity, and `0x10`, `+5`, `.5` or `1e3` is not an integer parameter's value. Read as JSON, they are the numbers 3, 1000, 16, 5 and 0.5."},
	{"yaml-only", "YAML that has no JSON equivalent: merge keys, duplicate keys, and the limits on file size, nesting and aliases (see Limits)."},
}

// writeSchemas writes the reference page's section on the JSON Schemas:
// where they go, the modeline, and what only cairn validate checks.
func writeSchemas(b *bytes.Buffer) {
	b.WriteString("\n## JSON Schemas\n\n")
	b.WriteString("`cairn schema --out DIR` writes one JSON Schema (draft 2020-12) per kind, at a path that changes only with the apiVersion ")
	b.WriteString("(the layout of kubeconform's `{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json` template). ")
	b.WriteString("Run it at the root of your GitOps repo and commit the result; run it again when you upgrade cairn:\n\n")
	b.WriteString("```\ncairn schema --out schemas\n")
	for _, kind := range Kinds() {
		p, _ := SchemaPath(kind)
		fmt.Fprintf(b, "#   schemas/%s\n", p)
	}
	b.WriteString("```\n\n")
	b.WriteString("Then the first line of each spec names its schema by a path relative to the spec file, which editors ")
	b.WriteString("(VS Code's YAML extension, IntelliJ, Neovim: anything built on yaml-language-server) resolve inside your repo, ")
	b.WriteString("offline and at the version of cairn you run. For `clusters/prod/my-production-db.yaml`:\n\n")
	for _, kind := range []string{PostgresKind, EtcdKind} {
		p, _ := SchemaPath(kind)
		fmt.Fprintf(b, "```yaml\n# yaml-language-server: $schema=../../schemas/%s\n```\n\n", p)
	}
	b.WriteString("One `../` per folder between the spec and the repo's root. The copies in cairn's own repo are in `docs/schemas/`.\n\n")
	b.WriteString("The schemas say everything of what `cairn validate` checks that a JSON Schema can say: the fields and their types, ")
	b.WriteString(fmt.Sprintf("the member counts (instances 1 to %d; etcd sizes %s), the supported versions (from the versions table), ", MaxPostgresInstances, intsText(EtcdSizes())))
	b.WriteString("synchronousStandbys below instances, names, namespaces, labels, quantities, durations, cron expressions, time zones ")
	b.WriteString("(those of the tz database Go embeds), storage locations and backup IDs, and every PostgreSQL parameter: refused ones with the reason, ")
	b.WriteString("unknown ones, and each value's type, range and enum on the major of `spec.version`.\n\n")
	b.WriteString("Only `cairn validate` checks these rules, which an editor accepts (the schema corpus in ")
	b.WriteString("`planner/spec/testdata/schema-corpus` holds a case of each):\n\n| Rule | Checked by `cairn validate` only |\n|---|---|\n")
	for _, r := range validateOnly {
		fmt.Fprintf(b, "| `%s` | %s |\n", r.ID, cell(r.Rule))
	}
	b.WriteString("\nCluster names are unique across the repo: `cairn validate` checks it when given the repo, a schema sees one file. ")
	b.WriteString("`cairn validate` also accepts a time zone that only the machine's own tz database has. ")
	b.WriteString("Rules that need the running cluster (storage shrinks, downgrades, a major upgrade without backups, a changed storage class) ")
	b.WriteString("are the planner's: `cairn plan` refuses them against the live state.\n")
}

func intsText(list []int) string {
	var out []string
	for _, n := range list {
		out = append(out, fmt.Sprint(n))
	}
	return strings.Join(out, ", ")
}
