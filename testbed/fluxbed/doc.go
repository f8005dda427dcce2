// Package fluxbed runs real Flux for tests: source-controller and
// kustomize-controller v1.9.6, built through the Go module proxy into
// .cache/bin by `make testbin-node`, with their CRDs from the same
// modules, against a test control plane. A GitRepository named
// flux-system (what `flux bootstrap` creates) follows a test's git server,
// and one Kustomization per cluster is made from examples/flux exactly as
// a person would copy it, so the example is what the tests run.
//
// The controllers run as processes of the test, not as pods: they need
// no image, and the node's pods stay those cairn renders.
package fluxbed
