package spec

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "go.yaml.in/yaml/v3"
)

// update is the package's only test flag: it rewrites the generated files
// that TestGenerated and TestEmbeddedTimeZones compare against.
var update = flag.Bool("update", false, "rewrite docs/schemas/, docs/spec-reference.md and schema_timezones.go")

const docsDir = "../../docs"

// TestGenerated keeps the committed schemas and reference page in step
// with the types. Run `go test ./planner/spec -run TestGenerated -update`
// after changing a type or a table. docs/schemas/ holds exactly what
// `cairn schema --out docs/schemas` writes.
func TestGenerated(t *testing.T) {
	files := map[string][]byte{"spec-reference.md": Reference()}
	for _, kind := range Kinds() {
		b, err := Schema(kind)
		if err != nil {
			t.Fatal(err)
		}
		path, _ := SchemaPath(kind)
		files["schemas/"+path] = b
	}
	for name, want := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(docsDir, filepath.FromSlash(name))
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v; run go test ./planner/spec -run TestGenerated -update", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is out of date; run go test ./planner/spec -run TestGenerated -update", path)
			}
		})
	}
	t.Run("nothing else in docs/schemas", func(t *testing.T) {
		err := filepath.WalkDir(filepath.Join(docsDir, "schemas"), func(path string, d os.DirEntry, err error) error {
			rel, _ := filepath.Rel(docsDir, path)
			if err == nil && !d.IsDir() && files[filepath.ToSlash(rel)] == nil {
				t.Errorf("%s is not generated; remove it", path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestSchemaStableAndStrict(t *testing.T) {
	if got, want := Kinds(), []string{EtcdKind, PostgresKind}; !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %v, want %v", got, want)
	}
	if _, err := Schema("MysqlCluster"); err == nil || err.Error() != `no schema for kind "MysqlCluster"; kinds: EtcdCluster, PostgresCluster` {
		t.Errorf("Schema(MysqlCluster) error = %v", err)
	}
	paths := map[string]string{
		PostgresKind: "db.example.com/postgrescluster_v1alpha1.json",
		EtcdKind:     "etcd.database.coreos.com/etcdcluster_v1beta2.json",
	}
	for _, kind := range Kinds() {
		t.Run(kind, func(t *testing.T) {
			if p, _ := SchemaPath(kind); p != paths[kind] {
				t.Errorf("SchemaPath = %s, want %s", p, paths[kind])
			}
			a, _ := Schema(kind)
			b, _ := Schema(kind)
			if !bytes.Equal(a, b) || !bytes.HasSuffix(a, []byte("}\n")) {
				t.Fatal("schema output is not stable or lacks a trailing newline")
			}
			s := loadSchema(t, kind)
			if id := s["$id"]; id != "https://cairn.dev/schemas/"+paths[kind] {
				t.Errorf("$id = %v", id)
			}
			var objects int
			walkSchema(s, "", func(path string, n map[string]any) {
				if n["type"] == "object" || slices.Contains(asList(n["type"]), "object") {
					if n["properties"] != nil {
						objects++
					}
					if n["additionalProperties"] == nil && n["properties"] != nil {
						t.Errorf("%s: additionalProperties not set", path)
					}
				}
				if n["description"] == nil && n["$ref"] == nil && path != "" && !strings.HasSuffix(path, "*") {
					t.Errorf("%s: no description", path)
				}
			})
			if objects < 6 {
				t.Errorf("only %d objects in the schema", objects)
			}
		})
	}
}

func asList(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

// TestSchemaPatternsArePortable keeps every pattern to what RE2 (Go, this
// test's validator) and ECMA-262 with the u flag (the validators of VS
// Code, IntelliJ and yaml-language-server) read alike.
func TestSchemaPatternsArePortable(t *testing.T) {
	escape := regexp.MustCompile(`\\(.)`)
	for _, kind := range Kinds() {
		var patterns []string
		var collect func(v any)
		collect = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if p, ok := x.(string); ok && k == "pattern" {
						patterns = append(patterns, p)
					}
					if k == "patternProperties" {
						for p := range x.(map[string]any) {
							patterns = append(patterns, p)
						}
					}
					collect(x)
				}
			case []any:
				for _, x := range v {
					collect(x)
				}
			}
		}
		collect(loadSchema(t, kind))
		if len(patterns) < 15 {
			t.Fatalf("%s: only %d patterns", kind, len(patterns))
		}
		for _, p := range patterns {
			if _, err := regexp.Compile(p); err != nil {
				t.Errorf("%s: %v", kind, err)
			}
			if strings.Contains(strings.ReplaceAll(p, "(?:", ""), "(?") || strings.Contains(p, "[[:") {
				t.Errorf("%s: pattern %.80q uses RE2-only or lookaround syntax", kind, p)
			}
			for _, m := range escape.FindAllStringSubmatch(p, -1) {
				if !strings.Contains(`\.+*?()|[]{}^$/dtnrfvx`, m[1]) {
					t.Errorf("%s: pattern %.80q escapes %q, which RE2 and ECMA-262 read differently", kind, p, m[1])
				}
			}
		}
	}
}

// TestReferenceDocumentsConform checks the design's reference documents,
// and every valid document of the decode tests, against the generated
// schema with a real JSON Schema validator.
func TestReferenceDocumentsConform(t *testing.T) {
	docs := []string{ReferenceDocuments[PostgresKind], ReferenceDocuments[EtcdKind]}
	docs = append(docs, validDocuments...)
	for i, doc := range docs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if _, err := Decode("valid.yaml", []byte(doc)); err != nil {
				t.Fatalf("not a valid document: %v", err)
			}
			if err := schemaCheck(t, doc); err != nil {
				t.Errorf("does not conform to its schema: %v", err)
			}
		})
	}
}

// TestSchemaRefuses checks that the schema is not vacuous: structurally
// broken documents fail it.
func TestSchemaRefuses(t *testing.T) {
	cases := map[string]struct{ old, new string }{
		"unknown field":   {`  instances: 3`, `  instaces: 3`},
		"missing field":   {`  instances: 3`, ``},
		"wrong const":     {`apiVersion: "db.example.com/v1alpha1"`, `apiVersion: "db.example.com/v1"`},
		"pattern":         {`"14.5"`, `"v14.5"`},
		"string for int":  {`instances: 3`, `instances: "3"`},
		"bad name":        {`"my-production-db"`, `"Upper"`},
		"nested unknown":  {`    schedule:`, `    schedul:`},
		"scalar for list": {`storage: "100Gi"`, `storage: [1]`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(ReferenceDocuments[PostgresKind], c.old, c.new, 1)
			if err := schemaCheck(t, doc); err == nil {
				t.Errorf("the schema accepts\n%s", doc)
			}
		})
	}
}

func loadSchema(t *testing.T, kind string) map[string]any {
	t.Helper()
	b, err := Schema(kind)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func walkSchema(n map[string]any, path string, fn func(string, map[string]any)) {
	fn(path, n)
	props, _ := n["properties"].(map[string]any)
	for k, p := range props {
		walkSchema(p.(map[string]any), strings.TrimPrefix(path+"."+k, "."), fn)
	}
	if ap, ok := n["additionalProperties"].(map[string]any); ok {
		walkSchema(ap, path+".*", fn)
	}
}

var compiled = struct {
	sync.Mutex
	m map[string]*jsonschema.Schema
}{m: map[string]*jsonschema.Schema{}}

// compiledSchema is kind's generated schema, compiled by
// github.com/santhosh-tekuri/jsonschema.
func compiledSchema(t testing.TB, kind string) *jsonschema.Schema {
	t.Helper()
	compiled.Lock()
	defer compiled.Unlock()
	if s := compiled.m[kind]; s != nil {
		return s
	}
	b, err := Schema(kind)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(kind+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(kind + ".json")
	if err != nil {
		t.Fatalf("compile the %s schema: %v", kind, err)
	}
	compiled.m[kind] = s
	return s
}

// schemaCheck validates one YAML document against the schema of its
// kind, as an editor does: the YAML is read as JSON values first.
func schemaCheck(t testing.TB, doc string) error {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	kind, _ := v.(map[string]any)["kind"].(string)
	if kind != PostgresKind && kind != EtcdKind {
		t.Fatalf("no kind in\n%s", doc)
	}
	return validateJSON(t, compiledSchema(t, kind), v)
}

func validateJSON(t testing.TB, s *jsonschema.Schema, v any) error {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}
