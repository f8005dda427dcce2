// Package gitrepo is cairn's use of a GitOps repo through go-git: clone it
// into a working directory, commit a rendered folder onto the base branch
// on a branch of its own, and push it, so that the same input always gives
// the same commit and a repeated run writes nothing.
//
// Commits are deterministic: their author time is the base commit's, so
// re-publishing an unchanged step produces the same hash and no push.
// Pushes carry a lease on the branch's previous head; a push rejected
// because someone else moved the branch is fetched and rebuilt on the new
// state, a bounded number of times.
//
// A branch's head is cairn's only when cairn can prove it from the
// objects (provenance.go): its tree recomputed as its parent's, a commit
// of the base, with exactly the step's folder replaced by what cairn
// rendered; or a signature of cairn's key. Names, emails and trailers
// prove nothing. A head cairn cannot prove is a person's: never pushed
// over, and Merge takes only a commit that changes the step's folder
// alone.
package gitrepo
