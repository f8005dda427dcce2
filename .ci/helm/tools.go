//go:build tools

// Package tools pins the helm CLI that `make test` lints and renders
// charts/cairn with; the Makefile builds helm.sh/helm/v4/cmd/helm from
// this module (.cache/bin/helm).
package tools

import _ "helm.sh/helm/v4/cmd/helm"
