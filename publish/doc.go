// Package publish turns rendered steps into commits on branches of the
// GitOps repo and into pull requests, and keeps them correct when runs are
// repeated, interrupted or concurrent. It never plans: it publishes what
// the planner and renderer produced.
//
// Publisher publishes plans made by the caller (package reconcile plans
// against the base commit it fetched): per cluster, the first step's
// rendered tree as a deterministic commit on branch
// cairn/<cluster>/<step-id>, and a pull request through a Provider: Local
// (records in the repo) or GitHub. The body (body.go, with livetable.go,
// impact.go and links.go) says what the step does, to which pods, against
// which live state, and links its neighbours; every text from specs,
// policies and the live state goes through md (markdown.go). Once a
// merged step's gates hold, its pull request gets one outcome comment
// (outcome.go) through a provider that is a Commenter.
//
// Imports: planner/plan, planner/spec, planner/live (the live state a
// body shows), planner/contract (the Secrets and labels a step's impact
// names), renderer (its trees, and the builds Render returns for the
// diff; publish never builds), publish/gitrepo. Never the planner.
package publish
