//go:build tools

// Package kube pins the Kubernetes control plane that cairn's tests run:
// kube-apiserver and kube-controller-manager, built from k8s.io/kubernetes
// through the Go module proxy (`make testbin`).
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
