package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// SchemaBaseURL is the base of the generated JSON Schemas' $id; each
// kind's $id is SchemaBaseURL + SchemaPath(kind). Nothing fetches it: an
// editor reads the copy `cairn schema --out` wrote into the user's repo.
const SchemaBaseURL = "https://cairn.dev/schemas/"

// SchemaPath is where a kind's schema lives below the folder `cairn schema
// --out` writes: <group>/<kind>_<version>.json, kind in lower case, the
// layout of the CRDs-catalog and of kubeconform's
// {{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json template. It
// changes only with the apiVersion, so a modeline naming it stays valid
// across cairn releases.
func SchemaPath(kind string) (string, error) { return builtin.SchemaPath(kind) }

// SchemaPath is where the schema of a kind s serves lives (see the
// function SchemaPath).
func (s Served) SchemaPath(kind string) (string, error) {
	k, ok := s.kinds[kind]
	if !ok {
		return "", fmt.Errorf("no schema for kind %q; kinds: %s", kind, strings.Join(s.Names(), ", "))
	}
	group, version, _ := strings.Cut(k.APIVersion, "/")
	return group + "/" + strings.ToLower(kind) + "_" + version + ".json", nil
}

// schemaNode is one JSON Schema (draft 2020-12) node. Field order is the
// output order, and map keys are sorted by encoding/json, so the output is
// byte-stable. patternErrorMessage and errorMessage are the messages VS
// Code's and yaml-language-server's validators show instead of their
// generic ones; other validators ignore them.
type schemaNode struct {
	Schema               string                 `json:"$schema,omitempty"`
	ID                   string                 `json:"$id,omitempty"`
	Ref                  string                 `json:"$ref,omitempty"`
	Title                string                 `json:"title,omitempty"`
	Description          string                 `json:"description,omitempty"`
	Type                 any                    `json:"type,omitempty"` // a string or a list of strings
	Const                any                    `json:"const,omitempty"`
	Enum                 []any                  `json:"enum,omitempty"`
	Pattern              string                 `json:"pattern,omitempty"`
	PatternErrorMessage  string                 `json:"patternErrorMessage,omitempty"`
	MaxLength            int                    `json:"maxLength,omitempty"`
	Minimum              *float64               `json:"minimum,omitempty"`
	ExclusiveMinimum     *float64               `json:"exclusiveMinimum,omitempty"`
	Maximum              *float64               `json:"maximum,omitempty"`
	ExclusiveMaximum     *float64               `json:"exclusiveMaximum,omitempty"`
	MaxProperties        int                    `json:"maxProperties,omitempty"`
	Default              string                 `json:"default,omitempty"`
	Required             []string               `json:"required,omitempty"`
	PropertyNames        *schemaNode            `json:"propertyNames,omitempty"`
	Properties           map[string]*schemaNode `json:"properties,omitempty"`
	PatternProperties    map[string]*schemaNode `json:"patternProperties,omitempty"`
	AdditionalProperties any                    `json:"additionalProperties,omitempty"` // false or a node
	Not                  *schemaNode            `json:"not,omitempty"`
	AnyOf                []*schemaNode          `json:"anyOf,omitempty"`
	AllOf                []*schemaNode          `json:"allOf,omitempty"`
	If                   *schemaNode            `json:"if,omitempty"`
	Then                 *schemaNode            `json:"then,omitempty"`
	ErrorMessage         string                 `json:"errorMessage,omitempty"`
	Defs                 map[string]*schemaNode `json:"$defs,omitempty"`
}

func num(x float64) *float64 { return &x }

// nothing is a node no value matches, with the reason shown for it.
func nothing(why string) *schemaNode {
	return &schemaNode{Description: why, Not: &schemaNode{}, ErrorMessage: why}
}

// nullable lets an optional field be written as null, which the decoder
// reads as not written.
func nullable(n *schemaNode) *schemaNode {
	switch {
	case n.Ref != "":
		// The definitions optional fields refer to (timeZone) hold null.
	case n.Enum != nil:
		if !slices.Contains(n.Enum, nil) {
			n.Enum = append(n.Enum, nil)
		}
	case n.Type != nil:
		types, ok := n.Type.([]string)
		if !ok {
			types = []string{n.Type.(string)}
		}
		if !slices.Contains(types, "null") {
			n.Type = append(slices.Clone(types), "null")
		}
	}
	return n
}

// scalarType describes a custom scalar type for the schema and the
// reference page.
type scalarType struct {
	name string // shown in the reference tables
	node func() *schemaNode
	note string // appended to the field's description
}

func scalarTypes() map[reflect.Type]scalarType {
	return map[reflect.Type]scalarType{
		reflect.TypeFor[Quantity](): {name: "quantity", node: quantityNode,
			note: "Must be greater than zero."},
		reflect.TypeFor[Duration](): {name: "duration", node: durationNode,
			note: "A duration: Go syntax (90m, 2h30m) or whole days or weeks (30d, 2w)."},
		reflect.TypeFor[Schedule](): {name: "cron schedule", node: func() *schemaNode { return &schemaNode{Ref: "#/$defs/cron"} }},
		reflect.TypeFor[Location](): {name: "storage location", node: locationNode},
		reflect.TypeFor[ParamValue](): {name: "parameter value", node: func() *schemaNode { return paramTextNode("") },
			note: "One line of at most 1024 characters."},
		reflect.TypeFor[PostgresVersion](): {name: "PostgreSQL version", node: postgresVersionNode,
			note: "Supported: " + PostgresSupported() + "."},
		reflect.TypeFor[CompactionRetention](): {name: "compaction retention", node: func() *schemaNode { return &schemaNode{Type: []string{"string", "integer"}} },
			note: "A duration in periodic mode, a number of revisions in revision mode."},
		reflect.TypeFor[EtcdVersion](): {name: "etcd version", node: etcdVersionNode,
			note: "Supported: " + EtcdSupported() + ", except " + etcdBlocked() + "."},
	}
}

// etcdBlocked lists the etcd releases cairn refuses to run.
func etcdBlocked() string {
	var out []string
	for _, l := range etcdLines {
		for _, p := range sortedIntKeys(l.Blocked) {
			out = append(out, fmt.Sprintf("3.%d.%d", l.Minor, p))
		}
	}
	return strings.Join(out, ", ")
}

func sortedIntKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fieldInfo is what the schema and the reference page say about one field.
type fieldInfo struct {
	Path     string       // e.g. "spec.backup.schedule"
	Name     string       // the json name
	Index    int          // of the Go struct field
	Type     reflect.Type // pointers removed
	Required bool
	Const    string
	Minimum  *int
	Default  string
	Desc     string
}

// fieldInfos returns the documented fields of struct type t at path, in
// declaration order.
func fieldInfos(t reflect.Type, path string, defaults map[string]string) []fieldInfo {
	var out []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		fi := fieldInfo{Path: name, Name: name, Index: i, Type: f.Type, Desc: f.Tag.Get("desc")}
		if path != "" {
			fi.Path = path + "." + name
		}
		for fi.Type.Kind() == reflect.Pointer {
			fi.Type = fi.Type.Elem()
		}
		for _, opt := range strings.Split(f.Tag.Get("schema"), ",") {
			key, val, _ := strings.Cut(opt, "=")
			switch key {
			case "required":
				fi.Required = true
			case "const":
				fi.Const = val
			case "minimum":
				n, err := strconv.Atoi(val)
				if err != nil {
					panic(fmt.Sprintf("spec: bad minimum in schema tag of %s.%s", t.Name(), f.Name))
				}
				fi.Minimum = &n
			}
		}
		fi.Default = defaults[fi.Path]
		out = append(out, fi)
	}
	return out
}

// defaultsOf returns the default of every field setDefaults fills in, by
// path, found by defaulting a document whose optional sections are all
// present but empty.
func defaultsOf(c Document) map[string]string {
	v := reflect.ValueOf(c).Elem()
	allocate(v)
	c.SetDefaults()
	out := map[string]string{}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for _, fi := range fieldInfos(v.Type(), path, nil) {
			fv := reflect.Indirect(v.Field(fi.Index))
			switch {
			case fv.Kind() == reflect.Struct:
				walk(fv, fi.Path)
			case fv.Kind() == reflect.String && fv.String() != "":
				out[fi.Path] = fv.String()
			}
		}
	}
	walk(v, "")
	return out
}

// allocate sets every nil pointer-to-struct field of v, recursively.
func allocate(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		if f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct {
			f.Set(reflect.New(f.Type().Elem()))
			f = f.Elem()
		}
		if f.Kind() == reflect.Struct {
			allocate(f)
		}
	}
}

// Kinds returns the kinds cairn ships, sorted.
func Kinds() []string { return builtin.Names() }

// Schema returns the JSON Schema (draft 2020-12) of one kind's documents,
// indented with two spaces and ending in a newline. It says everything
// of what cairn validate checks that a schema can say (schema_rules.go);
// docs/spec-reference.md lists the rest. The output depends only on the
// Go types and tables, so it is byte-stable.
func Schema(kind string) ([]byte, error) { return builtin.Schema(kind) }

// Schema returns the JSON Schema of the documents of a kind s serves (see
// the function Schema).
func (s Served) Schema(kind string) ([]byte, error) {
	path, err := s.SchemaPath(kind)
	if err != nil {
		return nil, err
	}
	k := s.kinds[kind]
	g := &schemaGen{defaults: defaultsOf(k.New()), scalars: scalarTypes()}
	g.rules, _ = k.New().(kindSchema)
	root := g.structSchema(reflect.TypeOf(k.New()).Elem(), "")
	root.Schema = "https://json-schema.org/draft/2020-12/schema"
	root.ID = SchemaBaseURL + path
	root.Title = kind
	root.Description = fmt.Sprintf("A cairn %s document (apiVersion %s), kept in Git under clusters/. Generated from github.com/cairn-dev/cairn/planner/spec; do not edit. `cairn validate` checks a few more rules (docs/spec-reference.md, JSON Schemas).", kind, k.APIVersion)
	root.Defs = map[string]*schemaNode{"cron": cronNode(), "timeZone": timeZoneNode()}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("encode schema of %s: %w", kind, err)
	}
	return buf.Bytes(), nil
}

// schemaGen builds one kind's schema from its Go types, then lets the
// rules of schema_rules.go refine the node of each path.
type schemaGen struct {
	rules    kindSchema // nil for a kind with the shared rules only
	defaults map[string]string
	scalars  map[reflect.Type]scalarType
}

func (g *schemaGen) structSchema(t reflect.Type, path string) *schemaNode {
	n := &schemaNode{Type: "object", Properties: map[string]*schemaNode{}, AdditionalProperties: false}
	for _, fi := range fieldInfos(t, path, g.defaults) {
		p := g.typeSchema(fi.Type, fi.Path)
		p.Description = strings.TrimSpace(fi.Desc + " " + p.Description)
		if fi.Const != "" {
			p.Const = fi.Const
		}
		p.Default = fi.Default
		if fi.Minimum != nil {
			p.Minimum = num(float64(*fi.Minimum))
		}
		required := fi.Required || g.requiredByKind(fi.Path)
		g.refine(fi.Path, p)
		if required {
			n.Required = append(n.Required, fi.Name)
		} else {
			nullable(p)
		}
		n.Properties[fi.Name] = p
	}
	g.refineObject(path, n)
	return n
}

func (g *schemaGen) typeSchema(t reflect.Type, path string) *schemaNode {
	if s, ok := g.scalars[t]; ok {
		n := s.node()
		if n.Ref == "" {
			n.Description = s.note
		}
		return n
	}
	switch t.Kind() {
	case reflect.String:
		return &schemaNode{Type: "string"}
	case reflect.Int:
		return &schemaNode{Type: "integer"}
	case reflect.Bool:
		return &schemaNode{Type: "boolean"}
	case reflect.Map:
		return &schemaNode{Type: "object", AdditionalProperties: g.typeSchema(t.Elem(), path+".*")}
	case reflect.Struct:
		return g.structSchema(t, path)
	}
	panic(fmt.Sprintf("spec: no schema for %s at %s", t, path))
}
