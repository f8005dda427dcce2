// Package publish turns rendered steps into commits on branches of the
// GitOps repo and into pull requests, and keeps them correct when runs are
// repeated, interrupted or concurrent. It never plans: it publishes what
// the planner and renderer produced.
//
// Sub-packages: gitrepo (clone, commit, push with go-git) and the pull
// request providers. Imports: planner/plan, renderer (for trees), go-git.
package publish
