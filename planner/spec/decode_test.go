package spec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// pgHead is a valid PostgresCluster; pg appends lines from line 9 on.
const pgHead = `apiVersion: "db.example.com/v1alpha1"
kind: "PostgresCluster"
metadata:
  name: "db"
spec:
  version: "14.5"
  instances: 3
  storage: "100Gi"
`

// etcdHead is a valid EtcdCluster; etcd appends lines from line 8 on.
const etcdHead = `apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdCluster"
metadata:
  name: "etcd"
spec:
  size: 3
  version: "3.5.21"
`

func pg(extra ...string) string   { return pgHead + joinLines(extra) }
func etcd(extra ...string) string { return etcdHead + joinLines(extra) }

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// sub replaces the first old in doc with new; old must be there.
func sub(doc, old, new string) string {
	if !strings.Contains(doc, old) {
		panic("sub: " + old + " not in document")
	}
	return strings.Replace(doc, old, new, 1)
}

// validDocuments use every field; the schema test checks them too.
var validDocuments = []string{
	pg(
		"  storageClass: fast-ssd",
		"  synchronousStandbys: 1",
		"  resources:",
		"    requests: {cpu: 500m, memory: 2Gi}",
		"    limits: {cpu: 2, memory: 4Gi}",
		"  postgresql:",
		"    parameters:",
		"      max_connections: 200",
		"      shared_buffers: 1GB",
		"      enable_seqscan: off",
		"      random_page_cost: 1.1",
		`      pg_trgm.similarity_threshold: "0.4"`,
		"  backup:",
		`    schedule: "@daily"`,
		"    timeZone: Europe/Berlin",
		`    storageLocation: "file:///var/backups/db"`,
		"    retention: {count: 7, maxAge: 30d}",
		"  maintenanceWindow:",
		`    schedule: "0 22 * * 1-5"`,
		"    duration: 2h",
		"    timeZone: America/New_York",
	),
	sub(etcd(
		"  storage: 20Gi",
		"  storageClass: standard",
		"  resources: {requests: {cpu: 1}}",
		"  backup:",
		`    schedule: "0 0 */6 * * *"`,
		`    storageLocation: "s3://etcd-backups.example.com/prod/etcd"`,
		"    retention: {maxAge: 2w}",
		"  maintenanceWindow: {schedule: \"@weekly\", duration: 90m}",
	), `  name: "etcd"`, "  name: etcd\n  namespace: data\n  labels: {environment: production, app.kubernetes.io/part-of: payments}"),
}

type decodeCase struct {
	name string
	in   string
	want string // the whole error text; "" for none
	// check, when set, looks at the clusters Decode returned.
	check func(t *testing.T, cs []Cluster)
}

func runDecodeCases(t *testing.T, cases []decodeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs, err := Decode("f.yaml", []byte(c.in))
			got := ""
			if err != nil {
				got = err.Error()
				var list ErrorList
				if !errors.As(err, &list) {
					t.Errorf("error is a %T, not an ErrorList", err)
				}
			}
			if got != c.want {
				t.Errorf("error:\ngot  %q\nwant %q", got, c.want)
			}
			if c.check != nil {
				c.check(t, cs)
			}
		})
	}
}

func wantClusters(n int) func(*testing.T, []Cluster) {
	return func(t *testing.T, cs []Cluster) {
		t.Helper()
		if len(cs) != n {
			t.Errorf("got %d clusters, want %d", len(cs), n)
		}
	}
}

func TestDecodeReferenceDocuments(t *testing.T) {
	pgDoc, etcdDoc := ReferenceDocuments[PostgresKind], ReferenceDocuments[EtcdKind]
	runDecodeCases(t, []decodeCase{
		{name: "postgres", in: pgDoc, check: func(t *testing.T, cs []Cluster) {
			want := &PostgresCluster{
				APIVersion: PostgresAPIVersion, Kind: PostgresKind,
				Metadata: ObjectMeta{Name: "my-production-db"},
				Spec: PostgresSpec{Version: "14.5", Instances: 3, Storage: "100Gi",
					Backup: &Backup{Schedule: "0 2 * * *", TimeZone: "UTC", StorageLocation: "s3://my-backup-bucket/postgres"}},
			}
			if len(cs) != 1 {
				t.Fatalf("got %d clusters", len(cs))
			}
			got := cs[0].(*PostgresCluster)
			got.src = Source{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
			if v := got.Spec.Version.Parse(); v.String() != "14.5" || v.Major != 14 {
				t.Errorf("version parses as %v", v)
			}
		}},
		{name: "etcd", in: etcdDoc, check: func(t *testing.T, cs []Cluster) {
			c := cs[0].(*EtcdCluster)
			if c.Spec.Size != 3 || c.Spec.Version != "3.2.13" || c.Spec.Storage != DefaultEtcdStorage || c.Ref().String() != "EtcdCluster/my-etcd-cluster" {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "both in one file", in: pgDoc + "---\n" + etcdDoc, check: func(t *testing.T, cs []Cluster) {
			if len(cs) != 2 || cs[0].Source().Doc != 0 || cs[1].Source().Doc != 1 {
				t.Fatalf("got %d clusters", len(cs))
			}
			if line, col := cs[1].Source().Position("spec.version"); line != 19 || col != 12 {
				t.Errorf("etcd spec.version at %d:%d, want 19:12", line, col)
			}
		}},
	})
}

// TestReferenceDocumentsAreTheDesign keeps ReferenceDocuments, the example
// fleet and (when the design is checked out beside the repo) DESIGN.md
// identical.
func TestReferenceDocumentsAreTheDesign(t *testing.T) {
	for kind, name := range map[string]string{PostgresKind: "my-production-db", EtcdKind: "my-etcd-cluster"} {
		b, err := os.ReadFile(filepath.Join("../../examples/fleet/clusters", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != ReferenceDocuments[kind] {
			t.Errorf("examples/fleet/clusters/%s.yaml differs from ReferenceDocuments[%s]", name, kind)
		}
	}
	design, err := os.ReadFile("../../../shared/DESIGN.md")
	if err != nil {
		t.Skipf("DESIGN.md not beside the repo: %v", err)
	}
	m := regexp.MustCompile("(?s)## Reference documents.*?```yaml\n(.*?)```").FindSubmatch(design)
	if m == nil {
		t.Fatal("no reference documents block in DESIGN.md")
	}
	if want := ReferenceDocuments[PostgresKind] + "---\n" + ReferenceDocuments[EtcdKind]; string(m[1]) != want {
		t.Errorf("DESIGN.md reference documents:\n%s\ndiffer from ReferenceDocuments:\n%s", m[1], want)
	}
	if cs, err := Decode("DESIGN.md", m[1]); err != nil || len(cs) != 2 {
		t.Errorf("DESIGN.md block: %d clusters, %v", len(cs), err)
	}
}

func TestDecodeValidDocuments(t *testing.T) {
	for i, doc := range validDocuments {
		cs, err := Decode("valid.yaml", []byte(doc))
		if err != nil || len(cs) != 1 {
			t.Fatalf("validDocuments[%d]: %d clusters, %v", i, len(cs), err)
		}
	}
	cs, _ := Decode("valid.yaml", []byte(validDocuments[1]))
	e := cs[0].(*EtcdCluster)
	if e.Spec.Backup.TimeZone != "UTC" || e.Spec.MaintenanceWindow.TimeZone != "UTC" || e.Metadata.Labels["app.kubernetes.io/part-of"] != "payments" {
		t.Errorf("defaults or labels not applied: %+v %+v", e.Spec.Backup, e.Metadata)
	}
	cs, _ = Decode("valid.yaml", []byte(validDocuments[0]))
	p := cs[0].(*PostgresCluster)
	params := p.Spec.PostgreSQL.Parameters
	if params["max_connections"] != "200" || params["enable_seqscan"] != "off" || params["random_page_cost"] != "1.1" {
		t.Errorf("parameters not kept as written: %v", params)
	}
}

func TestDecodeDocuments(t *testing.T) {
	bad := sub(etcdHead, `"3.5.21"`, `"3.5.1"`)
	runDecodeCases(t, []decodeCase{
		{name: "three documents, the second bad", in: pgHead + "---\n" + bad + "---\n" + sub(etcdHead, `"etcd"`, `"etcd-2"`),
			want:  `f.yaml:16:12: spec.version: etcd 3.5.0-3.5.2 can lose writes after a crash (etcd advisory of March 2022); use 3.5.3 or newer`,
			check: wantClusters(2)},
		{name: "leading and trailing separators", in: "---\n" + pgHead + "---\n---\n", check: wantClusters(1)},
		{name: "comment-only document", in: "# nothing here\n---\n" + pgHead, check: wantClusters(1)},
		{name: "empty file", in: "", check: wantClusters(0)},
		{name: "only a separator", in: "---\n", check: wantClusters(0)},
		{name: "only separators and comments", in: "---\n# x\n---\n", check: wantClusters(0)},
		{name: "CRLF line endings", in: strings.ReplaceAll(pgHead+"---\n"+etcdHead, "\n", "\r\n"), check: wantClusters(2)},
		{name: "byte order mark", in: "\ufeff" + pgHead, check: wantClusters(1)},
		{name: "control character", in: sub(pgHead, `"db"`, "\"d\x1bb\""),
			want: `f.yaml:4:11: file contains the control character U+001B; specs must be text`},
		{name: "a list", in: "- a\n- b\n", want: `f.yaml:1:1: a cluster document must be a mapping with apiVersion, kind, metadata and spec`},
		{name: "a scalar", in: "---\nhello\n", want: `f.yaml:2:1: a cluster document must be a mapping with apiVersion, kind, metadata and spec`},
		{name: "syntax error at the end", in: pgHead + "  x: [\n", want: `f.yaml:9:1: invalid YAML: did not find expected node content`},
		{name: "unclosed flow mapping", in: pg("  resources: {limits: {cpu: 1}", "  storageClass: x"),
			want: `f.yaml:9:1: invalid YAML: did not find expected ',' or '}'`},
		// The YAML library names the line where the enclosing mapping starts.
		{name: "list item in a mapping", in: pg("  - x"), want: `f.yaml:6:1: invalid YAML: did not find expected key`},
		{name: "syntax error on the first line", in: "kind: a: b\n", want: `f.yaml:1:1: invalid YAML: mapping values are not allowed in this context`},
		{name: "tab indentation", in: pgHead + "\tx: 1\n", want: `f.yaml:9:1: invalid YAML: found character that cannot start any token`},
	})
}

func TestDecodeKinds(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "wrong apiVersion for kind", in: sub(pgHead, "db.example.com/v1alpha1", "etcd.database.coreos.com/v1beta2"),
			want: `f.yaml:1:13: apiVersion: PostgresCluster is served as "db.example.com/v1alpha1", got "etcd.database.coreos.com/v1beta2"`},
		{name: "old etcd apiVersion", in: sub(etcdHead, "v1beta2", "v1beta1"),
			want: `f.yaml:1:13: apiVersion: EtcdCluster is served as "etcd.database.coreos.com/v1beta2", got "etcd.database.coreos.com/v1beta1"`},
		{name: "missing apiVersion", in: strings.SplitN(pgHead, "\n", 2)[1],
			want: `f.yaml:1:1: apiVersion: missing; PostgresCluster is served as "db.example.com/v1alpha1"`},
		{name: "unknown kind", in: sub(pgHead, `"PostgresCluster"`, `"MysqlCluster"`),
			want: `f.yaml:2:7: kind: unknown kind "MysqlCluster"; valid kinds: EtcdCluster (etcd.database.coreos.com/v1beta2), PostgresCluster (db.example.com/v1alpha1)`},
		{name: "missing kind", in: sub(pgHead, "kind: \"PostgresCluster\"\n", ""),
			want: `f.yaml:1:1: kind: missing; valid kinds: EtcdCluster (etcd.database.coreos.com/v1beta2), PostgresCluster (db.example.com/v1alpha1)`},
		{name: "kind as a mapping", in: sub(pgHead, `"PostgresCluster"`, `{a: b}`),
			want: `f.yaml:2:7: kind: unknown kind ""; valid kinds: EtcdCluster (etcd.database.coreos.com/v1beta2), PostgresCluster (db.example.com/v1alpha1)`},
		{name: "kind through an alias", in: "x: &k PostgresCluster\n" + sub(pgHead, `"PostgresCluster"`, `*k`),
			want: `f.yaml:1:1: x: unknown field "x"; valid fields: apiVersion, kind, metadata, spec`},
	})
}

func TestDecodeFields(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "misspelt field", in: pg("  verison: x"),
			want: `f.yaml:9:3: spec.verison: unknown field "verison" (did you mean "version"?); valid fields: backup, instances, maintenanceWindow, postgresql, resources, restoreFrom, storage, storageClass, switchover, synchronousStandbys, tls, version`},
		{name: "unknown top-level field", in: "status: {}\n" + pgHead,
			want: `f.yaml:1:1: status: unknown field "status"; valid fields: apiVersion, kind, metadata, spec`},
		{name: "misspelt nested field", in: pg("  backup:", `    schedul: "@daily"`, `    storageLocation: "s3://bucket/x"`),
			want: `f.yaml:10:5: spec.backup.schedul: unknown field "schedul" (did you mean "schedule"?); valid fields: retention, schedule, storageLocation, timeZone`},
		{name: "misspelt metadata field", in: sub(pgHead, `  name: "db"`, "  name: db\n  lables: {a: b}"),
			want: `f.yaml:5:3: metadata.lables: unknown field "lables" (did you mean "labels"?); valid fields: labels, name, namespace`},
		{name: "case of a field", in: sub(pgHead, "instances", "Instances"),
			want: `f.yaml:7:3: spec.Instances: unknown field "Instances" (did you mean "instances"?); valid fields: backup, instances, maintenanceWindow, postgresql, resources, restoreFrom, storage, storageClass, switchover, synchronousStandbys, tls, version`},
		{name: "string for int", in: sub(pgHead, "instances: 3", `instances: "3"`),
			want: `f.yaml:7:14: spec.instances: must be a whole number, got the string "3"`},
		{name: "float for int", in: sub(pgHead, "instances: 3", `instances: 3.5`),
			want: `f.yaml:7:14: spec.instances: must be a whole number, got the number "3.5"`},
		{name: "bool for int", in: sub(pgHead, "instances: 3", `instances: yes`),
			want: `f.yaml:7:14: spec.instances: must be a whole number, got the string "yes"`},
		{name: "int out of range", in: sub(pgHead, "instances: 3", `instances: 4294967296`),
			want: `f.yaml:7:14: spec.instances: "4294967296" is out of range`},
		{name: "int for string", in: pg("  storageClass: 5"),
			want: `f.yaml:9:17: spec.storageClass: must be a string, got the number "5"; quote it to keep it as written: "5"`},
		{name: "bool for string", in: pg("  storageClass: true"),
			want: `f.yaml:9:17: spec.storageClass: must be a string, got the boolean "true"; quote it to keep it as written: "true"`},
		{name: "unquoted version 14.10", in: sub(pgHead, `"14.5"`, `14.10`),
			want: `f.yaml:6:12: spec.version: must be a quoted version such as "14.5", got "14.10" (unquoted, 14.10 would be read as the number 14.1)`},
		{name: "unquoted etcd version", in: sub(etcdHead, `"3.5.21"`, `3.5`),
			want: `f.yaml:7:12: spec.version: must be a quoted version such as "3.5.21", got "3.5"`},
		{name: "mapping where a scalar is expected", in: sub(pgHead, `"14.5"`, `{major: 14}`),
			want: `f.yaml:6:12: spec.version: must be a single value, got a mapping`},
		{name: "mapping for a label value", in: sub(pgHead, `  name: "db"`, "  name: db\n  labels:\n    team: {name: x}"),
			want: `f.yaml:6:11: metadata.labels.team: must be a string, got a mapping`},
		{name: "list for a struct", in: sub(pgHead, "metadata:\n  name: \"db\"", "metadata: [db]"),
			want: `f.yaml:3:11: metadata: must be a mapping of fields, got a list`},
		{name: "scalar for a map", in: pg("  postgresql:", "    parameters: max_connections=10"),
			want: `f.yaml:10:17: spec.postgresql.parameters: must be a mapping, got the string "max_connections=10"`},
		{name: "duplicate key", in: pg("  instances: 5"),
			want: `f.yaml:9:3: spec.instances: duplicate key "instances" (first at line 7)`},
		{name: "duplicate top-level key", in: pgHead + "kind: EtcdCluster\n",
			want: `f.yaml:9:1: kind: duplicate key "kind" (first at line 2)`},
		{name: "merge key", in: "base: &b {instances: 3}\n" + sub(pgHead, "  instances: 3", "  <<: *b"),
			want: "f.yaml:1:1: base: unknown field \"base\"; valid fields: apiVersion, kind, metadata, spec\nf.yaml:8:3: spec: merge keys (<<) are not supported; write the fields out"},
		{name: "non-string key", in: pg("  1: x"),
			want: `f.yaml:9:3: spec: keys must be strings, got the number "1"`},
		{name: "several problems, in order", in: sub(pg("  storageClass: 5", "  verison: x"), `"14.5"`, `14.5`),
			want: "f.yaml:6:12: spec.version: must be a quoted version such as \"14.5\", got \"14.5\" (unquoted, 14.10 would be read as the number 14.1)\n" +
				"f.yaml:9:17: spec.storageClass: must be a string, got the number \"5\"; quote it to keep it as written: \"5\"\n" +
				"f.yaml:10:3: spec.verison: unknown field \"verison\" (did you mean \"version\"?); valid fields: backup, instances, maintenanceWindow, postgresql, resources, restoreFrom, storage, storageClass, switchover, synchronousStandbys, tls, version"},
	})
}

func TestDecodeRequired(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "missing version", in: sub(pgHead, "  version: \"14.5\"\n", ""),
			want: `f.yaml:6:3: spec: missing required field "version"`},
		{name: "missing spec", in: strings.SplitAfter(pgHead, `"db"`+"\n")[0],
			want: `f.yaml:1:1: missing required field "spec"`},
		{name: "missing metadata and spec", in: "apiVersion: \"db.example.com/v1alpha1\"\nkind: PostgresCluster\n",
			want: "f.yaml:1:1: missing required field \"metadata\"\nf.yaml:1:1: missing required field \"spec\""},
		{name: "missing name", in: sub(pgHead, `  name: "db"`, `  namespace: "db"`),
			want: `f.yaml:4:3: metadata: missing required field "name"`},
		{name: "backup without location", in: pg("  backup:", `    schedule: "@daily"`),
			want: `f.yaml:10:5: spec.backup: missing required field "storageLocation"`},
		{name: "window without duration", in: etcd("  maintenanceWindow: {schedule: \"@daily\"}"),
			want: `f.yaml:8:22: spec.maintenanceWindow: missing required field "duration"`},
		{name: "null version", in: sub(pgHead, `"14.5"`, ``),
			want: `f.yaml:6:11: spec.version: required; it cannot be empty`},
		{name: "null storage", in: sub(pgHead, `"100Gi"`, `~`),
			want: `f.yaml:8:12: spec.storage: required; it cannot be empty`},
		{name: "empty name", in: sub(pgHead, `"db"`, `""`),
			want: `f.yaml:4:9: metadata.name: required; it cannot be empty`},
		{name: "null spec", in: strings.SplitAfter(pgHead, `"db"`+"\n")[0] + "spec:\n",
			want: "f.yaml:5:6: spec: missing required field \"version\"\nf.yaml:5:6: spec: missing required field \"instances\"\nf.yaml:5:6: spec: missing required field \"storage\""},
		{name: "null optional section", in: pg("  backup: ~", "  resources:"), check: wantClusters(1)},
	})
}

func TestDecodeNames(t *testing.T) {
	name := func(n string) string { return sub(pgHead, `"db"`, n) }
	const why = "; use lowercase letters, digits and '-', starting and ending with a letter or digit"
	const rfc = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	runDecodeCases(t, []decodeCase{
		{name: "path traversal", in: name(`"../x"`), want: `f.yaml:4:9: metadata.name: "../x" is not a valid name: ` + rfc + why},
		{name: "upper case", in: name(`Upper`), want: `f.yaml:4:9: metadata.name: "Upper" is not a valid name: ` + rfc + why},
		{name: "underscore", in: name(`a_b`), want: `f.yaml:4:9: metadata.name: "a_b" is not a valid name: ` + rfc + why},
		{name: "53 characters", in: name(strings.Repeat("a", 53)),
			want: `f.yaml:4:9: metadata.name: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"... is 53 characters; the limit is 52 (pod labels carry the name plus a hash and stop at 63)`},
		{name: "64 characters", in: name(strings.Repeat("a", 64)),
			want: `f.yaml:4:9: metadata.name: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"... is not a valid name: must be no more than 63 characters` + why},
		{name: "52 characters", in: name(strings.Repeat("a", 52)), check: wantClusters(1)},
		{name: "number", in: name(`123`), want: `f.yaml:4:9: metadata.name: must be a string, got the number "123"; quote it to keep it as written: "123"`},
		{name: "quoted number", in: name(`"123"`), check: wantClusters(1)},
		{name: "bad namespace", in: sub(pgHead, `  name: "db"`, "  name: db\n  namespace: Prod"),
			want: `f.yaml:5:14: metadata.namespace: "Prod" is not a valid namespace: ` + rfc},
		{name: "bad label key", in: sub(pgHead, `  name: "db"`, "  name: db\n  labels:\n    ok: fine\n    \"bad key\": x"),
			want: `f.yaml:7:16: metadata.labels["bad key"]: label key "bad key" is not valid: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{name: "bad label value", in: sub(pgHead, `  name: "db"`, "  name: db\n  labels:\n    ok: fine\n    example.com/team: a b"),
			want: `f.yaml:7:23: metadata.labels["example.com/team"]: label value "a b" is not valid: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
	})
}

func TestDecodeVersions(t *testing.T) {
	pgv := func(v string) string { return sub(pgHead, `"14.5"`, v) }
	etv := func(v string) string { return sub(etcdHead, `"3.5.21"`, v) }
	const pgSupported = "supported: 13.0-13.23, 14.0-14.24, 15.0-15.20, 16.0-16.15, 17.0-17.11, 18.0-18.6 except 18.5"
	const etcdSupported = "supported: 3.2.0-3.2.32, 3.3.0-3.3.27, 3.4.0-3.4.45, 3.5.0-3.5.35, 3.6.0-3.6.16, 3.7.0-3.7.3"
	runDecodeCases(t, []decodeCase{
		{name: "pg 12.1", in: pgv(`"12.1"`), want: `f.yaml:6:12: spec.version: PostgreSQL 12.1 is not a version cairn can run; ` + pgSupported},
		{name: "pg 14.99", in: pgv(`"14.99"`), want: `f.yaml:6:12: spec.version: PostgreSQL 14.99 is not a version cairn can run; ` + pgSupported},
		{name: "pg 14", in: pgv(`"14"`), want: `f.yaml:6:12: spec.version: version "14" must have 2 dot-separated numbers, for example "14.5"`},
		{name: "pg 14.5.1", in: pgv(`"14.5.1"`), want: `f.yaml:6:12: spec.version: version "14.5.1" must have 2 dot-separated numbers, for example "14.5"`},
		{name: "pg 014.5", in: pgv(`"014.5"`), want: `f.yaml:6:12: spec.version: version "014.5" must have 2 dot-separated numbers, for example "14.5"`},
		{name: "pg 18.4", in: pgv(`"18.4"`), check: wantClusters(1)},
		{name: "pg 13.0", in: pgv(`"13.0"`), check: wantClusters(1)},
		{name: "etcd 3.1.0", in: etv(`"3.1.0"`), want: `f.yaml:7:12: spec.version: etcd 3.1.0 is not a version cairn can run; ` + etcdSupported},
		{name: "etcd 3.5.1 blocked", in: etv(`"3.5.1"`),
			want: `f.yaml:7:12: spec.version: etcd 3.5.0-3.5.2 can lose writes after a crash (etcd advisory of March 2022); use 3.5.3 or newer`},
		{name: "etcd v3.5.3", in: etv(`"v3.5.3"`), want: `f.yaml:7:12: spec.version: version "v3.5.3" must have 3 dot-separated numbers, for example "3.5.21"`},
		{name: "etcd 3.5.3", in: etv(`"3.5.3"`), check: wantClusters(1)},
		{name: "etcd 3.5.36", in: etv(`"3.5.36"`), want: `f.yaml:7:12: spec.version: etcd 3.5.36 is not a version cairn can run; ` + etcdSupported},
		{name: "etcd 4.0.0", in: etv(`"4.0.0"`), want: `f.yaml:7:12: spec.version: etcd 4.0.0 is not a version cairn can run; ` + etcdSupported},
	})
}

func TestDecodeSchedulesAndDurations(t *testing.T) {
	backup := func(schedule string) string {
		return pg("  backup:", "    schedule: "+schedule, `    storageLocation: "s3://bucket/x"`)
	}
	const valid = `; valid: 5 fields (minute hour day-of-month month day-of-week) such as "0 2 * * *", 6 fields with seconds first, or @hourly/@daily/@weekly/@monthly/@yearly`
	runDecodeCases(t, []decodeCase{
		{name: "four fields", in: backup(`"0 2 * *"`),
			want: `f.yaml:10:15: spec.backup.schedule: invalid cron expression "0 2 * *": expected 5 to 6 fields, found 4: [0 2 * *]` + valid},
		{name: "minute 61", in: backup(`"61 * * * *"`),
			want: `f.yaml:10:15: spec.backup.schedule: invalid cron expression "61 * * * *": end of range (61) above maximum (59): 61` + valid},
		{name: "unknown descriptor", in: backup(`"@sometimes"`),
			want: `f.yaml:10:15: spec.backup.schedule: invalid cron expression "@sometimes": unrecognized descriptor: @sometimes` + valid},
		{name: "time zone in the expression", in: backup(`"CRON_TZ=UTC 0 2 * * *"`),
			want: `f.yaml:10:15: spec.backup.schedule: cron expression "CRON_TZ=UTC 0 2 * * *" must not carry a time zone; use the timeZone field`},
		{name: "unquoted number", in: backup(`5`),
			want: `f.yaml:10:15: spec.backup.schedule: must be a quoted cron expression such as "0 2 * * *", got "5"`},
		{name: "descriptor", in: backup(`"@hourly"`), check: wantClusters(1)},
		{name: "seconds first", in: backup(`"30 0 2 * * *"`), check: wantClusters(1)},
		{name: "window too long", in: etcd(`  maintenanceWindow: {schedule: "@daily", duration: 8d}`),
			want: `f.yaml:8:53: spec.maintenanceWindow.duration: must be at most 7d, got 8d`},
		{name: "bad duration", in: etcd(`  maintenanceWindow: {schedule: "@daily", duration: 2 hours}`),
			want: `f.yaml:8:53: spec.maintenanceWindow.duration: must be a duration such as 90m, 6h or 30d, got "2 hours"`},
		{name: "negative duration", in: etcd(`  maintenanceWindow: {schedule: "@daily", duration: -1h}`),
			want: `f.yaml:8:53: spec.maintenanceWindow.duration: must be a duration such as 90m, 6h or 30d, got "-1h"`},
		{name: "bad time zone", in: pg("  backup:", `    schedule: "@daily"`, `    storageLocation: "s3://bucket/x"`, "    timeZone: Mars/Olympus"),
			want: `f.yaml:12:15: spec.backup.timeZone: "Mars/Olympus" is not an IANA time zone such as UTC or Europe/Berlin`},
		{name: "Local time zone", in: etcd(`  maintenanceWindow: {schedule: "@daily", duration: 1h, timeZone: Local}`),
			want: `f.yaml:8:67: spec.maintenanceWindow.timeZone: Local depends on the machine; name a zone such as UTC or Europe/Berlin`},
	})
}

func TestDecodeQuantitiesAndLocations(t *testing.T) {
	storage := func(q string) string { return sub(pgHead, `"100Gi"`, q) }
	location := func(l string) string {
		return pg("  backup:", `    schedule: "@daily"`, "    storageLocation: "+l)
	}
	const want = `f.yaml:11:22: spec.backup.storageLocation: `
	runDecodeCases(t, []decodeCase{
		{name: "bad quantity", in: storage(`"100GB"`), want: `f.yaml:8:12: spec.storage: must be a Kubernetes quantity such as 100Gi or 500m, got "100GB"`},
		{name: "negative quantity", in: storage(`"-1Gi"`), want: `f.yaml:8:12: spec.storage: must be greater than zero, got "-1Gi"`},
		{name: "zero quantity", in: storage(`0`), want: `f.yaml:8:12: spec.storage: must be greater than zero, got "0"`},
		{name: "float quantity", in: storage(`1.5`), want: `f.yaml:8:12: spec.storage: must be a Kubernetes quantity such as 100Gi or 500m, got "1.5"`},
		{name: "integer quantity", in: storage(`107374182400`), check: wantClusters(1)},
		{name: "fractional quantity", in: storage(`1.5Ti`), check: wantClusters(1)},
		{name: "s3", in: location(`"s3://my-backup-bucket/postgres/prod"`), check: wantClusters(1)},
		{name: "s3 bucket only", in: location(`"s3://my-backup-bucket"`), check: wantClusters(1)},
		{name: "file", in: location(`"file:///var/backups"`), check: wantClusters(1)},
		{name: "http", in: location(`"http://backups.example.com/x"`), want: want + `scheme of "http://backups.example.com/x" must be s3 or file`},
		{name: "s3 with ..", in: location(`"s3://bucket/a/../b"`), want: want + `path of "s3://bucket/a/../b" must not contain . or .. segments`},
		{name: "s3 upper-case bucket", in: location(`"s3://My-Bucket/x"`), want: want + `bucket "My-Bucket" is not a valid S3 bucket name (3-63 lowercase letters, digits, dots and dashes)`},
		{name: "s3 with a query", in: location(`"s3://bucket/x?versionId=1"`), want: want + `must be s3://bucket/prefix or file:///path, got "s3://bucket/x?versionId=1"`},
		{name: "s3 with credentials", in: location(`"s3://key:secret@bucket/x"`), want: want + `must be s3://bucket/prefix or file:///path, got "s3://key:secret@bucket/x"`},
		{name: "file relative", in: location(`"file://backups/x"`), want: want + `file location "file://backups/x" must be an absolute path such as file:///var/backups`},
		{name: "file opaque", in: location(`"file:backups"`), want: want + `must be s3://bucket/prefix or file:///path, got "file:backups"`},
		{name: "file root", in: location(`"file:///"`), want: want + `file location "file:///" must be an absolute path such as file:///var/backups`},
		{name: "plain path", in: location(`/var/backups`), want: want + `scheme of "/var/backups" must be s3 or file`},
		{name: "requests over limits", in: pg("  resources:", "    requests: {cpu: 2, memory: 8Gi}", "    limits: {cpu: 1500m, memory: 4Gi}"),
			want: "f.yaml:11:19: spec.resources.limits.cpu: limit 1500m is below the request 2\nf.yaml:11:34: spec.resources.limits.memory: limit 4Gi is below the request 8Gi"},
		{name: "requests equal to limits", in: pg("  resources:", "    requests: {cpu: 2, memory: 4Gi}", "    limits: {cpu: 2000m, memory: 4096Mi}"), check: wantClusters(1)},
		{name: "limits only", in: pg("  resources: {limits: {memory: 4Gi}}"), check: wantClusters(1)},
	})
}

func TestDecodePostgresRules(t *testing.T) {
	params := func(lines ...string) string {
		return pg(append([]string{"  postgresql:", "    parameters:"}, lines...)...)
	}
	runDecodeCases(t, []decodeCase{
		{name: "synchronous standbys equal to instances", in: pg("  synchronousStandbys: 3"),
			want: `f.yaml:9:24: spec.synchronousStandbys: 3 synchronous standbys need at least 4 instances, got 3; lower it or add instances`},
		{name: "synchronous standbys above instances", in: pg("  synchronousStandbys: 5"),
			want: `f.yaml:9:24: spec.synchronousStandbys: 5 synchronous standbys need at least 6 instances, got 3; lower it or add instances`},
		{name: "negative synchronous standbys", in: pg("  synchronousStandbys: -1"),
			want: `f.yaml:9:24: spec.synchronousStandbys: must be 0 (asynchronous) or more, got -1`},
		{name: "two synchronous standbys of three", in: pg("  synchronousStandbys: 2"), check: wantClusters(1)},
		{name: "managed parameter", in: params("      max_connections: 100", "      port: 5433"),
			want: `f.yaml:12:13: spec.postgresql.parameters.port: port is managed by cairn; it cannot be set in a spec`},
		{name: "managed replication parameter", in: params("      synchronous_standby_names: '*'"),
			want: `f.yaml:11:34: spec.postgresql.parameters.synchronous_standby_names: synchronous_standby_names is managed by cairn (set spec.synchronousStandbys); it cannot be set in a spec`},
		{name: "invalid parameter name", in: params("      Max_Connections: 100"),
			want: `f.yaml:11:24: spec.postgresql.parameters.Max_Connections: "Max_Connections" is not a PostgreSQL parameter name (lowercase letters, digits and _, e.g. max_connections)`},
		{name: "parameter name with a space", in: params(`      "max connections": 100`),
			want: `f.yaml:11:26: spec.postgresql.parameters["max connections"]: "max connections" is not a PostgreSQL parameter name (lowercase letters, digits and _, e.g. max_connections)`},
		{name: "multi-line parameter value", in: params("      search_path: |", "        a", "        b"),
			want: `f.yaml:11:20: spec.postgresql.parameters.search_path: must be one line of printable characters; "a\nb\n" holds U+000A`},
		{name: "list as parameter value", in: params("      search_path: [a, b]"),
			want: `f.yaml:11:20: spec.postgresql.parameters.search_path: must be a single value, got a list`},
		{name: "too many parameters", in: params(manyParams(MaxParameters + 1)...),
			want: `f.yaml:11:7: spec.postgresql.parameters: 201 parameters; the limit is 200`},
	})
}

func manyParams(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "      p" + strings.Repeat("x", i%3) + "_" + strings.Repeat("a", i/3+1) + ": 1"
	}
	return out
}

func TestDecodeRetention(t *testing.T) {
	retention := func(r string) string {
		return etcd("  backup:", `    schedule: "@daily"`, `    storageLocation: "s3://bucket/x"`, "    retention: "+r)
	}
	const empty = `f.yaml:11:16: spec.backup.retention: set count (1 or more) and/or maxAge, or leave retention out to keep every backup`
	runDecodeCases(t, []decodeCase{
		{name: "empty", in: retention("{}"), want: empty},
		{name: "count zero", in: retention("{count: 0}"), want: empty},
		{name: "negative count", in: retention("{count: -2, maxAge: 30d}"), want: empty},
		{name: "max age under an hour", in: retention("{maxAge: 30m}"), want: `f.yaml:11:25: spec.backup.retention.maxAge: must be at least 1h, got 30m`},
		{name: "bad max age", in: retention("{maxAge: 1 month}"), want: `f.yaml:11:25: spec.backup.retention.maxAge: must be a duration such as 90m, 6h or 30d, got "1 month"`},
		{name: "count", in: retention("{count: 7}"), check: wantClusters(1)},
		{name: "weeks", in: retention("{maxAge: 4w}"), check: wantClusters(1)},
	})
}

func TestReservedLabelsAreRefused(t *testing.T) {
	for _, key := range []string{"cairn.dev/role", "app.kubernetes.io/instance"} {
		doc := "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: e\n  labels: {" + key + ": x}\nspec: {size: 3, version: \"3.5.21\"}\n"
		_, err := Decode("l.yaml", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), "is set by cairn") {
			t.Errorf("%s: %v", key, err)
		}
	}
}

func TestDecodeRestoreFrom(t *testing.T) {
	restore := func(lines ...string) string {
		// Trusted: these cases are about the other fields
		// (TestRestoreFromAForeignBucketNeedsTheOptIn).
		return etcd(append(append([]string{"  restoreFrom:"}, lines...), "    trustForeignBucket: true")...)
	}
	runDecodeCases(t, []decodeCase{
		{name: "all fields", in: restore(`    storageLocation: "file:///backups"`, `    cluster: old-etcd`, `    backup: 20261130T020000Z-1a2b3c`), check: wantClusters(1)},
		{name: "etcd: no ID", in: restore(`    storageLocation: "s3://bucket/x"`), want: `f.yaml:9:5: spec.restoreFrom.backup: an etcd cluster needs the backup's ID (cairn backup list shows them), so that every member restores the same snapshot`},
		{name: "etcd: latest", in: restore(`    storageLocation: "s3://bucket/x"`, `    backup: latest`), want: `f.yaml:10:13: spec.restoreFrom.backup: an etcd cluster needs the backup's ID (cairn backup list shows them), so that every member restores the same snapshot`},
		{name: "no location", in: restore(`    cluster: old`, `    backup: 20261130T020000Z-1a2b3c`), want: `f.yaml:9:5: spec.restoreFrom: missing required field "storageLocation"`},
		{name: "bad cluster", in: restore(`    storageLocation: "s3://bucket/x"`, `    backup: 20261130T020000Z-1a2b3c`, `    cluster: ../etc`), want: `f.yaml:11:14: spec.restoreFrom.cluster: cluster name "../etc" is not valid: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{name: "bad backup", in: restore(`    storageLocation: "s3://bucket/x"`, `    backup: "yesterday; rm -rf /"`), want: `f.yaml:10:13: spec.restoreFrom.backup: "yesterday; rm -rf /" is not a backup ID such as 20261130T020000Z-1a2b3c (cairn backup list shows them), nor latest`},
	})
}
