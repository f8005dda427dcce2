// Package spec is cairn's spec API: the cluster documents people keep in
// Git, their strict decoding, defaults, validation and JSON Schema.
//
// Each kind is served under the apiVersion of the operator documents
// people already write, from a file of its own (etcd.go, postgres.go)
// that holds its types, defaults, validation and schema rules; kinds.go
// lists the kinds cairn ships, and Serve builds a decoder of any list.
//
// Decoding is strict: unknown fields, wrong types, duplicate keys, bad
// names, versions cairn cannot run, bad cron expressions and bad quantities
// are errors of the form "file:line:col: field.path: what is wrong and what
// would be valid". Hostile input (alias bombs, huge or deeply nested
// documents, NUL bytes) is refused within fixed limits.
//
// Rules that depend on what is running (a storage shrink, a downgrade, an
// etcd size outside 1..7) belong to the planner, not here.
//
// Imports: planner/contract and its own YAML decoder
// (planner/spec/strictyaml) only of cairn's.
package spec
