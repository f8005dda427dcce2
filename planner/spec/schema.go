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

// SchemaBaseURL is where the generated JSON Schemas are published; each
// kind's $id is SchemaBaseURL + lower-case kind + ".json".
const SchemaBaseURL = "https://cairn.dev/schemas/"

// schemaNode is one JSON Schema (draft 2020-12) node. Field order is the
// output order, and map keys are sorted by encoding/json, so the output is
// byte-stable.
type schemaNode struct {
	Schema               string                 `json:"$schema,omitempty"`
	ID                   string                 `json:"$id,omitempty"`
	Title                string                 `json:"title,omitempty"`
	Description          string                 `json:"description,omitempty"`
	Type                 any                    `json:"type,omitempty"` // a string or a list of strings
	Const                string                 `json:"const,omitempty"`
	Pattern              string                 `json:"pattern,omitempty"`
	MaxLength            int                    `json:"maxLength,omitempty"`
	Minimum              *int                   `json:"minimum,omitempty"`
	Default              string                 `json:"default,omitempty"`
	Required             []string               `json:"required,omitempty"`
	Properties           map[string]*schemaNode `json:"properties,omitempty"`
	AdditionalProperties any                    `json:"additionalProperties,omitempty"` // false or a node
}

// scalarType describes a custom scalar type for the schema and the
// reference page.
type scalarType struct {
	name    string // shown in the reference tables
	types   any
	pattern string
	minimum *int
	note    string // appended to the field's description
}

// quantityPattern is the pattern Kubernetes publishes for quantities,
// without the minus sign: cairn's quantities are all greater than zero.
const quantityPattern = `^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

func scalarTypes() map[reflect.Type]scalarType {
	one := 1
	return map[reflect.Type]scalarType{
		reflect.TypeFor[Quantity](): {name: "quantity", types: []string{"string", "integer"}, pattern: quantityPattern, minimum: &one,
			note: "Must be greater than zero."},
		reflect.TypeFor[Duration](): {name: "duration", types: "string", pattern: `^([0-9]{1,4}[dw]|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+)$`,
			note: "A duration: Go syntax (90m, 2h30m) or whole days or weeks (30d, 2w)."},
		reflect.TypeFor[Schedule](): {name: "cron schedule", types: "string"},
		reflect.TypeFor[Location](): {name: "storage location", types: "string", pattern: `^(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^?#]*)?|file:///[^?#]+)$`},
		reflect.TypeFor[ParamValue](): {name: "parameter value", types: []string{"string", "number", "boolean"},
			note: "One line of at most 1024 characters."},
		reflect.TypeFor[PostgresVersion](): {name: "PostgreSQL version", types: "string", pattern: `^\d+\.\d+$`,
			note: "Supported: " + PostgresSupported() + "."},
		reflect.TypeFor[EtcdVersion](): {name: "etcd version", types: "string", pattern: `^\d+\.\d+\.\d+$`,
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
func defaultsOf(c servedCluster) map[string]string {
	v := reflect.ValueOf(c).Elem()
	allocate(v)
	c.setDefaults()
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

// Kinds returns the kinds cairn serves, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Schema returns the JSON Schema (draft 2020-12) of one kind's documents,
// indented with two spaces and ending in a newline. The output depends
// only on the Go types, so it is byte-stable.
func Schema(kind string) ([]byte, error) {
	k, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("no schema for kind %q; kinds: %s", kind, strings.Join(Kinds(), ", "))
	}
	c := k.newCluster()
	root := structSchema(reflect.TypeOf(c).Elem(), "", defaultsOf(k.newCluster()), scalarTypes())
	root.Schema = "https://json-schema.org/draft/2020-12/schema"
	root.ID = SchemaBaseURL + strings.ToLower(kind) + ".json"
	root.Title = kind
	root.Description = fmt.Sprintf("A cairn %s document (apiVersion %s), kept in Git under clusters/. Generated from github.com/cairn-dev/cairn/planner/spec; do not edit.", kind, k.apiVersion)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("encode schema of %s: %w", kind, err)
	}
	return buf.Bytes(), nil
}

func structSchema(t reflect.Type, path string, defaults map[string]string, scalars map[reflect.Type]scalarType) *schemaNode {
	n := &schemaNode{Type: "object", Properties: map[string]*schemaNode{}, AdditionalProperties: false}
	for _, fi := range fieldInfos(t, path, defaults) {
		p := typeSchema(fi.Type, fi.Path, defaults, scalars)
		p.Description = strings.TrimSpace(fi.Desc + " " + p.Description)
		p.Const, p.Default = fi.Const, fi.Default
		if fi.Minimum != nil {
			p.Minimum = fi.Minimum
		}
		if fi.Path == "metadata.name" {
			p.Pattern, p.MaxLength = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, MaxNameLength
		}
		if fi.Required {
			n.Required = append(n.Required, fi.Name)
		}
		n.Properties[fi.Name] = p
	}
	return n
}

func typeSchema(t reflect.Type, path string, defaults map[string]string, scalars map[reflect.Type]scalarType) *schemaNode {
	if s, ok := scalars[t]; ok {
		return &schemaNode{Type: s.types, Pattern: s.pattern, Minimum: s.minimum, Description: s.note}
	}
	switch t.Kind() {
	case reflect.String:
		return &schemaNode{Type: "string"}
	case reflect.Int:
		return &schemaNode{Type: "integer"}
	case reflect.Bool:
		return &schemaNode{Type: "boolean"}
	case reflect.Map:
		return &schemaNode{Type: "object", AdditionalProperties: typeSchema(t.Elem(), path+".*", defaults, scalars)}
	case reflect.Struct:
		return structSchema(t, path, defaults, scalars)
	}
	panic(fmt.Sprintf("spec: no schema for %s at %s", t, path))
}
