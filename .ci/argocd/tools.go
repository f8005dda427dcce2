//go:build tools

// Package argocd pins the Argo CD cairn's real-node tests run: v3.2.6,
// built through the Go module proxy (`make testbin-argocd`) as Argo CD's
// one binary (github.com/argoproj/argo-cd/v3/cmd), which picks the
// component to run from its name (argv[0] or ARGOCD_BINARY_NAME):
// argocd-application-controller, argocd-repo-server,
// argocd-applicationset-controller. Argo CD's module carries replace
// directives (k8s.io/* pinned to v0.34.0, among others), which a dependent
// module does not inherit, so go.mod repeats them.
package argocd

import (
	_ "github.com/argoproj/argo-cd/v3/cmd"
)
