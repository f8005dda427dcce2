//go:build tools

// Package flux pins the Flux controllers cairn's real-node tests run:
// source-controller and kustomize-controller v1.9.6, built through the Go
// module proxy (`make testbin-flux`). Their modules carry replace
// directives, which a dependent module does not inherit, so go.mod
// repeats them.
package flux

import (
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)
