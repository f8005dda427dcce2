package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "go.yaml.in/yaml/v3"

	"github.com/cairn-dev/cairn/planner/spec"
)

func TestSchemaMatchesCommittedCopies(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := cairn(t, "schema", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{"db.example.com/postgrescluster_v1alpha1.json", "etcd.database.coreos.com/etcdcluster_v1beta2.json"} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		got, _ := os.ReadFile(path)
		want, err := os.ReadFile(filepath.Join("../../docs/schemas", filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from docs/schemas (make generate): %v", name, err)
		}
		if !strings.Contains(out, path+"\n") {
			t.Errorf("stdout does not name %s:\n%s", path, out)
		}
	}
	code, out, _ = cairn(t, "schema", "EtcdCluster")
	if code != exitOK || !strings.Contains(out, `"title": "EtcdCluster"`) {
		t.Errorf("exit %d:\n%.200s", code, out)
	}
	if code, _, errOut := cairn(t, "schema"); code != exitUsage || !strings.Contains(errOut, "name a kind") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := cairn(t, "schema", "Redis"); code != exitUsage || !strings.Contains(errOut, `no schema for kind "Redis"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// TestSchemaCorpusAgreesWithValidate runs every case of the schema
// corpus (planner/spec/testdata/schema-corpus) through the schemas
// `cairn schema --out` writes, with a real JSON Schema validator, and
// through `cairn validate`: both accept the cases marked valid, both
// refuse those marked invalid, and only cairn validate refuses those
// marked validate-only (the rules docs/spec-reference.md lists).
func TestSchemaCorpusAgreesWithValidate(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := cairn(t, "schema", "--out", dir); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, kind := range spec.Kinds() {
		rel, _ := spec.SchemaPath(kind)
		c := jsonschema.NewCompiler()
		s, err := c.Compile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		schemas[kind] = s
	}
	cases := readSchemaCorpus(t)
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schemaErr := validateYAML(t, schemas, c.doc)
			file := filepath.Join(t.TempDir(), "clusters", "case.yaml")
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(c.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := cairn(t, "validate", file)
			if code != exitOK && code != exitInvalid {
				t.Fatalf("cairn validate: exit %d: %s", code, errOut)
			}
			schemaOK, validateOK := schemaErr == nil, code == exitOK
			want := map[string][2]bool{"valid": {true, true}, "invalid": {false, false}, "validate-only": {true, false}}[c.want]
			if schemaOK != want[0] || validateOK != want[1] {
				t.Errorf("case %d, marked %s: the schema accepts it: %v (%v); cairn validate accepts it: %v (%s)",
					i, c.want, schemaOK, schemaErr, validateOK, strings.TrimSpace(errOut))
			}
		})
	}
}

type schemaCase struct{ name, want, doc string }

var schemaCaseHeader = regexp.MustCompile(`^# (valid|invalid|validate-only) ?([a-z-]*): (.+)\n`)

// readSchemaCorpus reads the corpus as planner/spec's readCorpus does.
func readSchemaCorpus(t *testing.T) []schemaCase {
	t.Helper()
	files, err := filepath.Glob("../../planner/spec/testdata/schema-corpus/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out []schemaCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			m := schemaCaseHeader.FindStringSubmatch(doc)
			if m == nil {
				t.Fatalf("%s: a case without a header: %.60q", f, doc)
			}
			out = append(out, schemaCase{name: filepath.Base(f) + ": " + m[3], want: m[1], doc: doc})
		}
	}
	return out
}

// validateYAML checks a YAML document against its kind's schema as an
// editor does: read as JSON values first.
func validateYAML(t *testing.T, schemas map[string]*jsonschema.Schema, doc string) error {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	s := schemas[v["kind"].(string)]
	if s == nil {
		t.Fatalf("no schema for kind %v", v["kind"])
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}
