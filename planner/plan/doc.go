// Package plan defines a plan: the ordered, gated steps that take one
// cluster from what is running to what its spec asks for.
//
// Plans are plain data. They round-trip through JSON and YAML unchanged,
// each step has a stable ID (the same change planned again gets the same
// ID), a Kind with exactly one typed parameter struct, the gates that must
// hold before it starts and after it is applied, and whether it disrupts
// clients or can be undone. A plan records fingerprints of the spec and of
// the observed state it was computed from.
//
// Imports: planner/contract only of cairn's (the shared names a step's
// parameters carry: TLS modes, resources), and sigs.k8s.io/yaml; the
// planner, renderer, publisher and policies all depend on it.
package plan
