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
// Parse checks the file's size and bytes first: Limits.MaxBytes is what
// bounds the cost of parsing, as yaml.v3 builds a document's whole tree
// before anything can count it (up to about 125 bytes allocated per byte
// read). yaml.v3 then decodes one document at a time into a yaml.Node,
// and Parse counts each tree's values as written (aliases once) against
// Limits.MaxNodes and Limits.MaxFileValues, refusing the file at the
// first value past a limit, or at the first document past
// Limits.MaxDocuments. Decode walks a tree with a budget of its own: each
// alias is followed and its expansion counted against Limits.MaxNodes,
// and nesting, aliases included, against Limits.MaxDepth. yaml.v3's own
// alias limit ("excessive aliasing") applies only when it expands aliases
// itself, which this package never asks it to do.
//
// Values are mapped by their `json` struct tags so that one set of tags
// serves YAML input, JSON output and the generated JSON Schema. Types that
// decode themselves from a scalar implement ScalarUnmarshaler.
//
// This package must not import anything from cairn; it is shared by the
// spec, live-state and policy decoders.
package strictyaml
