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
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// update is the package's only test flag: it rewrites the generated files
// that TestGenerated compares against.
var update = flag.Bool("update", false, "rewrite docs/schemas/*.json and docs/spec-reference.md")

const docsDir = "../../docs"

// TestGenerated keeps the committed schemas and reference page in step
// with the types. Run `go test ./planner/spec -run TestGenerated -update`
// after changing a type.
func TestGenerated(t *testing.T) {
	files := map[string][]byte{"spec-reference.md": Reference()}
	for _, kind := range Kinds() {
		b, err := Schema(kind)
		if err != nil {
			t.Fatal(err)
		}
		files["schemas/"+strings.ToLower(kind)+".json"] = b
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
}

func TestSchemaStableAndStrict(t *testing.T) {
	if got, want := Kinds(), []string{EtcdKind, PostgresKind}; !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %v, want %v", got, want)
	}
	if _, err := Schema("MysqlCluster"); err == nil || err.Error() != `no schema for kind "MysqlCluster"; kinds: EtcdCluster, PostgresCluster` {
		t.Errorf("Schema(MysqlCluster) error = %v", err)
	}
	for _, kind := range Kinds() {
		t.Run(kind, func(t *testing.T) {
			a, _ := Schema(kind)
			b, _ := Schema(kind)
			if !bytes.Equal(a, b) || !bytes.HasSuffix(a, []byte("}\n")) {
				t.Fatal("schema output is not stable or lacks a trailing newline")
			}
			s := loadSchema(t, kind)
			if id := s["$id"]; id != "https://cairn.dev/schemas/"+strings.ToLower(kind)+".json" {
				t.Errorf("$id = %v", id)
			}
			var objects int
			walkSchema(s, "", func(path string, n map[string]any) {
				if n["type"] == "object" && n["properties"] != nil {
					objects++
					if n["additionalProperties"] != false {
						t.Errorf("%s: additionalProperties = %v, want false", path, n["additionalProperties"])
					}
				}
				if n["description"] == nil && path != "" && !strings.HasSuffix(path, "*") {
					t.Errorf("%s: no description", path)
				}
			})
			if objects < 6 {
				t.Errorf("only %d objects in the schema", objects)
			}
		})
	}
}

// TestReferenceDocumentsConform checks the design's reference documents,
// and every valid document of the decode tests, against the generated
// schema with a small structural validator.
func TestReferenceDocumentsConform(t *testing.T) {
	docs := []string{ReferenceDocuments[PostgresKind], ReferenceDocuments[EtcdKind]}
	docs = append(docs, validDocuments...)
	for i, doc := range docs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if _, err := Decode("valid.yaml", []byte(doc)); err != nil {
				t.Fatalf("not a valid document: %v", err)
			}
			var v map[string]any
			if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
				t.Fatal(err)
			}
			kind, _ := v["kind"].(string)
			if problems := conform(loadSchema(t, kind), v, ""); len(problems) > 0 {
				t.Errorf("does not conform to the %s schema:\n%s", kind, strings.Join(problems, "\n"))
			}
		})
	}
}

// TestSchemaRefuses checks that the validator (and so the schema) is not
// vacuous: structurally broken documents fail it.
func TestSchemaRefuses(t *testing.T) {
	cases := map[string]struct{ old, new, want string }{
		"unknown field":   {`  instances: 3`, `  instaces: 3`, "spec.instaces: not in the schema"},
		"missing field":   {`  instances: 3`, ``, "spec: missing instances"},
		"wrong const":     {`kind: "PostgresCluster"`, `kind: "EtcdCluster"`, `kind: "EtcdCluster" is not the const`},
		"pattern":         {`"14.5"`, `"v14.5"`, `spec.version: "v14.5" does not match`},
		"string for int":  {`instances: 3`, `instances: "3"`, "spec.instances: want integer"},
		"bad name":        {`"my-production-db"`, `"Upper"`, `metadata.name: "Upper" does not match`},
		"nested unknown":  {`    schedule:`, `    schedul:`, "spec.backup.schedul: not in the schema"},
		"scalar for list": {`storage: "100Gi"`, `storage: [1]`, "spec.storage: want [string integer]"},
	}
	s := loadSchema(t, PostgresKind)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(ReferenceDocuments[PostgresKind], c.old, c.new, 1)
			var v map[string]any
			if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
				t.Fatal(err)
			}
			problems := strings.Join(conform(s, v, ""), "\n")
			if !strings.Contains(problems, c.want) {
				t.Errorf("problems %q do not mention %q", problems, c.want)
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

// conform is a structural JSON Schema check of v against s: type, const,
// pattern, minimum, required, properties and additionalProperties.
func conform(s map[string]any, v any, path string) []string {
	if !typeMatches(s["type"], v) {
		return []string{fmt.Sprintf("%s: want %v, got %T", path, s["type"], v)}
	}
	var out []string
	if c, ok := s["const"]; ok && c != v {
		out = append(out, fmt.Sprintf("%s: %q is not the const %q", path, v, c))
	}
	if p, ok := s["pattern"].(string); ok {
		if str, isStr := v.(string); isStr && !regexp.MustCompile(p).MatchString(str) {
			out = append(out, fmt.Sprintf("%s: %q does not match %s", path, str, p))
		}
	}
	if m, ok := s["minimum"].(float64); ok {
		if n, isInt := v.(int); isInt && float64(n) < m {
			out = append(out, fmt.Sprintf("%s: %d is below %v", path, n, m))
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return out
	}
	props, _ := s["properties"].(map[string]any)
	required, _ := s["required"].([]any)
	for _, r := range required {
		if _, ok := obj[r.(string)]; !ok {
			out = append(out, fmt.Sprintf("%s: missing %s", path, r))
		}
	}
	for k, val := range obj {
		p := strings.TrimPrefix(path+"."+k, ".")
		switch sub, ap := props[k], s["additionalProperties"]; {
		case sub != nil:
			out = append(out, conform(sub.(map[string]any), val, p)...)
		case ap == false || ap == nil:
			out = append(out, p+": not in the schema")
		default:
			out = append(out, conform(ap.(map[string]any), val, p)...)
		}
	}
	slices.Sort(out)
	return out
}

func typeMatches(want, v any) bool {
	if list, ok := want.([]any); ok {
		return slices.ContainsFunc(list, func(w any) bool { return typeMatches(w, v) })
	}
	switch v.(type) {
	case string:
		return want == "string"
	case int:
		return want == "integer" || want == "number"
	case float64:
		return want == "number"
	case bool:
		return want == "boolean"
	case map[string]any:
		return want == "object"
	}
	return false
}
