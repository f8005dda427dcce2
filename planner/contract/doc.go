// Package contract is the one home of every name that the rendered
// manifests, the planner, the runtime, the instance manager and the test
// beds must agree on: label keys and their values, the pod role values,
// annotations, the names of a cluster's ConfigMaps, Secrets, Services and
// accounts, the keys of the ConfigMap <cluster>-cairn, the status
// documents the runtime writes and the planner reads, and a member's name
// from its ordinal and back.
//
// A name defined here is spelled nowhere else in product code; a test
// (contract_literals_test.go) greps the tree for stray literals. Each side
// of the contract imports this package, so the two cannot drift.
//
// contract imports nothing of cairn's, and nothing but the standard
// library: every package may import it.
package contract
