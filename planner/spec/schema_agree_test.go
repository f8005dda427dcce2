package spec

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// Property tests: over every row of the tables validation reads, the
// schema and validation agree.

func decodeOK(doc string) error {
	_, err := Decode("x.yaml", []byte(doc))
	return err
}

// agree fails when the schema and Decode disagree about doc.
func agree(t *testing.T, what, doc string) {
	t.Helper()
	schemaErr, specErr := schemaCheck(t, doc), decodeOK(doc)
	if schemaErr == nil && specErr != nil && byValidateOnlyRule(specErr) {
		return
	}
	if (schemaErr == nil) != (specErr == nil) {
		t.Errorf("%s: schema says %v, validation says %v", what, schemaErr, specErr)
	}
}

// byValidateOnlyRule says whether err is the refusal of a rule a pattern
// cannot state, and only cairn validate checks (validateOnly): a
// quantity's range, a schedule's times.
func byValidateOnlyRule(err error) bool {
	for _, msg := range []string{"each member's volume must be", "never fires", "shorter than a second, and cron fires"} {
		if strings.Contains(err.Error(), msg) {
			return true
		}
	}
	return false
}

// TestSchemaAgreesOnEveryVersion: every version of the versions table,
// the blocked ones, one past each line's newest and the lines around.
func TestSchemaAgreesOnEveryVersion(t *testing.T) {
	pg := []string{"12.0", "12.22", "19.0", "9.6", "14.99", "014.5", "14.05", "14", "14.5.1", "v14.5", "14.-1", "1000.0"}
	for _, m := range postgresMajors {
		for minor := 0; minor <= m.LastMinor+2; minor++ {
			pg = append(pg, fmt.Sprintf("%d.%d", m.Major, minor))
		}
	}
	for _, v := range pg {
		agree(t, "PostgreSQL "+v, strings.Replace(ReferenceDocuments[PostgresKind], `"14.5"`, strconv.Quote(v), 1))
	}
	etcd := []string{"3.1.20", "3.8.0", "4.0.0", "2.3.8", "3.5", "3.05.3", "3.5.03", "v3.5.21", "3.5.21.0"}
	for _, l := range etcdLines {
		for patch := 0; patch <= l.LastPatch+2; patch++ {
			etcd = append(etcd, fmt.Sprintf("3.%d.%d", l.Minor, patch))
		}
	}
	for _, v := range etcd {
		agree(t, "etcd "+v, strings.Replace(ReferenceDocuments[EtcdKind], `"3.2.13"`, strconv.Quote(v), 1))
	}
}

// paramSamples are values to try on a parameter of type p, written as
// YAML scalars: each bound and its neighbours, the booleans, the enum's
// values in other cases, units, lists and paths.
func paramSamples(p pgParam) []string {
	out := []string{"~", `""`, "true", "false", "on", "OFF", "yes", "0", "1", "2", "-1", "1.5", "0.5", "x", `"a b"`, "stderr", `"stderr, jsonlog"`,
		`"csvlog,syslog"`, `"a/b"`, `"\"$user\", public"`, `"a,"`, `"\"a"`, "1e3", `"5 kB"`, `"5MB"`, `"10min"`, `"1 TB"`, `"1kb"`}
	for _, w := range strings.Split(p.enum, ",") {
		out = append(out, strconv.Quote(w), strconv.Quote(strings.ToUpper(w)))
	}
	if p.typ == pgInt || p.typ == pgReal {
		for _, b := range []float64{p.min, p.max} {
			if math.Abs(b) > 1e15 {
				continue
			}
			for _, d := range []float64{-1, -0.5, -0.25, 0, 0.25, 0.5, 1} {
				out = append(out, strconv.FormatFloat(b+d, 'f', -1, 64))
			}
		}
	}
	return out
}

// TestSchemaAgreesOnEveryParameter: every parameter of the allow-list
// tables, on every supported major, with values of each JSON type. A
// value written as a string is checked against its range only by
// validation (schemaOnlyByValidate: param-string-range).
func TestSchemaAgreesOnEveryParameter(t *testing.T) {
	names := map[string]bool{"plpgsql.variable_conflict": true, "pg_stat_statements.max": true, "plperl.on_init": true,
		"foo_command": true, "include_x": true, "Max_connections": true, "max-connections": true, "no_such_parameter": true}
	for _, m := range []map[string]bool{keysOf(pgParams), keysOf(pgAdded), keysOf(refusedParameters)} {
		maps.Copy(names, m)
	}
	s := compiledSchema(t, PostgresKind)
	var checked int
	for _, m := range postgresMajors {
		for _, name := range slices.Sorted(maps.Keys(names)) {
			p, _ := lookupParameter(name, m.Major)
			for _, sample := range paramSamples(p) {
				value, text := scalarSample(t, sample)
				params := map[string]any{name: value}
				doc := map[string]any{"apiVersion": PostgresAPIVersion, "kind": PostgresKind, "metadata": map[string]any{"name": "x"},
					"spec": map[string]any{"version": fmt.Sprintf("%d.0", m.Major), "instances": 1, "storage": "1Gi",
						"postgresql": map[string]any{"parameters": params}}}
				schemaErr := s.Validate(doc) // YAML's values are JSON's: no round trip needed
				specErr := CheckParameter(name, text, m.Major)
				checked++
				if (schemaErr == nil) == (specErr == nil) {
					continue
				}
				_, isString := value.(string)
				if isString && schemaErr == nil && strings.Contains(specErr.Error(), "range") {
					continue // param-string-range: validation only
				}
				if sample == "1e3" && p.typ == pgInt && schemaErr == nil {
					continue // yaml-number-form: the schema sees the number 1000
				}
				t.Errorf("PostgreSQL %d, %s: %s: schema says %v, validation says %v", m.Major, name, sample, schemaErr, specErr)
			}
		}
	}
	t.Logf("%d parameter values checked", checked)
}

var scalarSamples = map[string]struct {
	value any
	text  string
}{}

// scalarSample is what YAML makes of one scalar: its JSON value, and the
// text the decoder sees (null is "").
func scalarSample(t *testing.T, sample string) (any, string) {
	if v, ok := scalarSamples[sample]; ok {
		return v.value, v.text
	}
	var value any
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(sample), &value); err != nil {
		t.Fatal(err)
	}
	_ = yaml.Unmarshal([]byte(sample), &node)
	text := node.Content[0].Value
	if node.Content[0].Tag == "!!null" {
		text = ""
	}
	scalarSamples[sample] = struct {
		value any
		text  string
	}{value, text}
	return value, text
}

// TestSchemaAgreesOnScalars: the patterns of quantities, durations, cron
// expressions and storage locations against the Go code that parses them.
func TestSchemaAgreesOnScalars(t *testing.T) {
	cases := []struct {
		kind, old string
		values    []string
	}{
		{PostgresKind, `"100Gi"`, []string{"1", "0", "-1", "+1", "1Gi", "0Gi", "0.0Gi", ".5Gi", "0.5", "5.", "1.Gi", ".", "1e3", "1E", "1e", "1e-100", "1e1000",
			"1e3Gi", "1ki", "1KI", "1Ki", "1k", "1K", "100m", "1n", "1u", "0.0001n", "00001", " 1Gi", "1Gi ", "1 Gi", "1.5.5", "1e+3", "1E-3", "1.5e2", "0e5", "0.e5", "+0", "-0.5Gi", "1Pi", "1Ei", "1P", "1EiB"}},
		{PostgresKind, `"0 2 * * *"`, []string{"0 2 * * *", "@daily", "@every 1h", "@every  1h", "@every -1h", "@every 1h30m", "@every 0", "@every 1d", "@weekly ", " @hourly", "@Daily",
			"0\u00a02 * * *", "0 2 * * * ", "TZ=UTC 0 2 * * *", "CRON_TZ=UTC 0 2 * * *", "0 2 * * 7", "0 2 * * 6", "0 2 * * sun-SAT", "*/0 * * * *", "*/+5 * * * *", "+5 * * * *",
			"0 2 * jan/2 *", "60 * * * * *", "59 59 23 31 12 6", ", * * * *", ",, * * * *", "1,,2 * * * *", "*-5 * * * *", "*-a-b/2 * * * *", "?-1 * * * *", "*x * * * *",
			"0 0 2 * * * *", "0 2 * *", "0 2 * * ?", "0 24 * * *", "0 23 * * *", "0 0 0 * *", "0 0 32 * *", "0 0 1 13 *", "0 0 1 0 *", "0 0 1 JAN-dec *", "0 0 1 janu *",
			"007 02 * * *", "1-5/2 * * * *", "1/2/3 * * * *", "1-2-3 * * * *", "-1 * * * *", "1- * * * *", "*/-1 * * * *", "*/999999999999999999 * * * *", "", "   ",
			"0 2 * * mon,wed,FRI", "0 2 1-31/3 * *", "0\t2\t*\t*\t*", "0 2 * * * *", "*/5 * * * * *"}},
		{PostgresKind, `"s3://my-backup-bucket/postgres"`, []string{"s3://bucket", "s3://bucket/", "s3://bucket/x", "s3://bu", "s3://b.c", "s3://a..b/x", "s3://Bucket/x", "S3://bucket/x",
			"s3://bucket/x?", "s3://bucket/x#", "s3://bucket/x?#", "s3://bucket/x?a=b", "s3://bucket/x#f", "s3://user@bucket/x", "s3://bucket:90/x", "s3:///x", "s3:/bucket/x",
			"s3://bucket/a b", "s3://bucket/a%zz", "s3://bucket/a%20b", "s3://bucket/a/../b", "s3://bucket/./b", "s3://bucket/.x", "s3://bucket/...", "s3://bucket/x/..", "s3://bucket/x/.",
			"s3://bucket/x\\y", "s3://bucket/é", "file:///x", "file:///", "file:/x", "file:x", "file://x/y", "file:////x", "file:///.", "file:///a/../b", "FILE:///x", "file:/x/..", "file:/.x",
			"gs://bucket/x", "s3://-bucket/x", "s3://bucket-/x", "s3://b/x", "s3://" + strings.Repeat("a", 63), "s3://" + strings.Repeat("a", 64), "file:///x\x7f"}},
	}
	for _, c := range cases {
		for _, v := range c.values {
			agree(t, fmt.Sprintf("%s %q", c.old, v), strings.Replace(ReferenceDocuments[c.kind], c.old, strconv.Quote(v), 1))
		}
	}
	for _, v := range []string{"30d", "0d", "1w", "99999d", "10000d", "1h", "+2h", "-2h", "90m", "1.5h", ".5h", "1.h", "1µs", "1μs", "1h30m", "1H", "1d2h", "", "1", "30 d"} {
		doc := strings.Replace(ReferenceDocuments[PostgresKind], `    schedule: "0 2 * * *"`, "    schedule: \"0 2 * * *\"\n    retention: {count: 1, maxAge: "+strconv.Quote(v)+"}", 1)
		schemaErr, specErr := schemaCheck(t, doc), decodeOK(doc)
		if (schemaErr == nil) != (specErr == nil) && !(schemaErr == nil && strings.Contains(fmt.Sprint(specErr), "at least 1h")) {
			t.Errorf("maxAge %q: schema says %v, validation says %v", v, schemaErr, specErr)
		}
	}
}
