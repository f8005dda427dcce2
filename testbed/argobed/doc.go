// Package argobed runs real Argo CD for tests: argocd-repo-server and
// argocd-application-controller v3.2.6 (and, for an ApplicationSet,
// argocd-applicationset-controller), Argo CD's one binary built through
// the Go module proxy into .cache/bin by `make testbin-argocd`, with its
// CRDs from the same module and Debian's redis-server as its cache,
// against a test control plane. Applications follow a test's git server
// (testbed/gitbed) and are made from examples/argocd exactly as a person
// would copy them, so the example is what the tests run.
//
// Drift asks Argo CD itself: a hard refresh, then the Application's own
// sync status, per-resource status and health. Nothing here diffs
// manifests.
//
// The components run as processes of the test, not as pods, as Argo CD's
// own local development setup runs them (ARGOCD_FAKE_IN_CLUSTER: the
// in-cluster destination is the test's kubeconfig). No product package
// imports this one.
package argobed
