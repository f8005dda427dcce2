// Package sandbox names the pod sandbox ("pause") image of the test
// beds' real node: make image builds it (images/build/pause) under this
// name, and the node's containerd runs every pod's sandbox from it. It is
// a leaf, so the image tool's module can name the image without the test
// beds' dependencies.
package sandbox

// Image is the sandbox image's name, the one containerd 1.6 expects by
// default, so a node's configuration reads as any other's.
const Image = "registry.k8s.io/pause:3.10"
