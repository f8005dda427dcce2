// Package renderer turns a cluster spec and its plan into the kustomize tree
// that Argo CD or Flux syncs: runnable Kubernetes manifests, never
// placeholders.
//
// Layout, under rendered/<cluster>/ of the GitOps repo:
//
//	kustomization.yaml        entry point; selects the current step
//	base/                     the cluster as it runs before the plan
//	steps/<step-id>/          one overlay per step, patching the one before
//	PLAN.md, plan.json        the plan, the current step marked
//
// A step's overlay holds only what that step changes (a replica count, a
// partition and an image, grown volumes, a runtime request), so a reviewer
// sees exactly the change. The manifests never set what the runtime owns:
// the role labels on pods and the runtime's status objects.
//
// Render is pure and byte-stable: no clock, no I/O, sorted keys. Every
// overlay is built with sigs.k8s.io/kustomize/api (krusty) before Render
// returns; builds may run side by side (build.go says why that is safe).
//
// Imports: planner/plan, planner/spec, planner/contract and version (the
// default image's tag) only of cairn's (and Kubernetes API types and
// kustomize).
// The renderer never touches Git, GitHub or a cluster.
package renderer
