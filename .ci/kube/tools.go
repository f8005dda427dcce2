//go:build tools

// Package kube pins the Kubernetes control plane and node that cairn's
// tests run: kube-apiserver, kube-controller-manager and kube-scheduler,
// and for the real node kubelet and kube-proxy, built from
// k8s.io/kubernetes through the Go module proxy (`make testbin-kube`,
// `make testbin-node`).
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
