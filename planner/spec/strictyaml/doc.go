// Package strictyaml decodes YAML into typed Go values the way a careful
// reviewer reads a file: every unknown field, wrong type, duplicate key or
// out-of-budget construct is an error that names the file, line, column and
// field path, and nothing is silently dropped.
//
// It sits on go.yaml.in/yaml/v3's node tree rather than its reflection
// decoder so that positions survive decoding, aliases are expanded under a
// node budget (an alias-expansion bomb is an error, not an OOM), and panics
// inside the YAML library are turned into errors.
//
// Parse builds those trees itself, node for node as yaml.v3 would, from the
// events of a copy of yaml.v3's parser (internal/yamlevents): values are
// counted as the tree grows, so a file past its limits is refused where it
// crosses them, and parsing never costs more than the limits allow.
//
// Values are mapped by their `json` struct tags so that one set of tags
// serves YAML input, JSON output and the generated JSON Schema. Types that
// decode themselves from a scalar implement ScalarUnmarshaler.
//
// This package must not import anything from cairn; it is shared by the
// spec, live-state and policy decoders.
package strictyaml
