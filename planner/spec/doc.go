// Package spec is cairn's spec API: the cluster documents people keep in
// Git, their strict decoding, defaults, validation and JSON Schema.
//
// Two kinds are served, each under the apiVersion of the operator documents
// people already write:
//
//	db.example.com/v1alpha1           PostgresCluster
//	etcd.database.coreos.com/v1beta2  EtcdCluster
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
