package renderer

import (
	"bytes"
	"math"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// YAML out, byte for byte as before, with fewer conversions.
//
// kustomize writes a built resource out (resource.Resource.AsYAML) as its
// node's YAML text, decoded to Go values, encoded to JSON, decoded again
// by yaml.v2 and encoded by yaml.v2 (sigs.k8s.io/yaml.JSONToYAML); cairn
// writes its own objects (sigs.k8s.io/yaml.Marshal) from the JSON step on.
// resourceYAML decodes the node straight to Go values, without the text
// (the text is the node's own encoding, so it decodes to the same values).
// The JSON round trip in the middle changes values in few ways: a
// float64 with an integral value comes back an int, a map comes back a
// map[any]any. jsonRoundTrip makes exactly those changes without the
// JSON, for the values it knows to be safe, and yaml.v2 encodes the result
// as it would have encoded the decoded JSON: yaml.v2 sorts map keys
// itself, so nothing else about the values matters.
//
// Anything else (a float that is not integral, an int64, a string with
// a character that the JSON text would carry raw and yaml.v2 would read
// differently or refuse, such as NEL or DEL) takes the original path, so
// the output is the same (TestYAMLOutIsKustomizes, TestMarshalIsSigsYAMLs).

// resourcesYAML is m.AsYaml().
func resourcesYAML(m resmap.ResMap) ([]byte, error) {
	var buf bytes.Buffer
	for i, res := range m.Resources() {
		out, ok := resourceYAML(res)
		if !ok {
			return m.AsYaml()
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(out)
	}
	return buf.Bytes(), nil
}

// resourceYAML is res.AsYAML(), or false when the value is not one
// jsonRoundTrip takes.
func resourceYAML(res *resource.Resource) ([]byte, bool) {
	// kyaml's RNode.MarshalJSON writes the node as YAML text and decodes
	// the text into a map; yaml.v3 decodes the node itself into the same
	// map (tags, anchors and merge keys alike).
	n := res.YNode()
	if n == nil || n.Kind != kyaml.MappingNode {
		return nil, false
	}
	m := map[string]any{}
	if err := n.Decode(&m); err != nil {
		return nil, false
	}
	v, ok := jsonRoundTrip(m)
	if !ok {
		return nil, false
	}
	out, err := yamlv2.Marshal(v)
	if err != nil {
		return nil, false
	}
	return out, true
}

// marshalYAMLData is sigs.k8s.io/yaml.Marshal(v).
func marshalYAMLData(v any) ([]byte, error) {
	if rt, ok := jsonRoundTrip(v); ok {
		if out, err := yamlv2.Marshal(rt); err == nil {
			return out, nil
		}
	}
	return yaml.Marshal(v)
}

// maxExactInt is the largest magnitude below which every integral
// float64 is written by encoding/json as plain digits that fit an int.
const maxExactInt = 1 << 53

// jsonRoundTrip is what yaml.v2 decodes into an any from the JSON that
// encoding/json writes for v, or false when v holds a value it does not
// take: only nil, bool, int, integral float64, safe strings, []any and
// map[string]any are taken.
func jsonRoundTrip(v any) (any, bool) {
	switch t := v.(type) {
	case nil:
		return nil, true
	case bool:
		return t, true
	case int:
		return t, true
	case float64:
		if t != math.Trunc(t) || math.Abs(t) >= maxExactInt {
			return nil, false
		}
		return int(t), true
	case string:
		return t, safeString(t)
	case []any:
		if t == nil { // JSON null
			return nil, true
		}
		out := make([]any, len(t))
		for i, e := range t {
			var ok bool
			if out[i], ok = jsonRoundTrip(e); !ok {
				return nil, false
			}
		}
		return out, true
	case map[string]any:
		if t == nil { // JSON null
			return nil, true
		}
		out := make(map[any]any, len(t))
		for k, e := range t {
			if !safeString(k) || k == "<<" { // "<<" is a merge key to yaml.v2
				return nil, false
			}
			rt, ok := jsonRoundTrip(e)
			if !ok {
				return nil, false
			}
			out[k] = rt
		}
		return out, true
	}
	return nil, false
}

// safeString reports whether s comes back from its JSON text unchanged:
// valid UTF-8 whose every rune encoding/json escapes (control characters,
// U+2028, U+2029) or yaml.v2 reads back as itself inside a double-quoted
// scalar (printable, not a line break, not a byte order mark, within the
// Basic Multilingual Plane).
func safeString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c == 0x7f {
			return safeRunes(s[i:])
		}
	}
	return true
}

func safeRunes(s string) bool {
	for _, r := range s {
		switch {
		case r == utf8.RuneError: // invalid UTF-8, or U+FFFD itself
			return false
		case r < 0x20, r == 0x2028, r == 0x2029: // escaped by encoding/json
		case r < 0x7f, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd && r != 0xfeff:
		default:
			return false
		}
	}
	return true
}
