// Package gitbed makes GitOps repos for tests: a bare repo on the local
// file system with a main branch, and commits and merges to it made as a
// person would make them (with plain go-git, not cairn's publisher).
//
// For tests only; no product package imports it.
package gitbed
