package renderer

import (
	"fmt"
	"path"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Builds run side by side. kustomize's process-wide state is its OpenAPI
// schema, which kyaml (v0.21) keeps under a lock of its own; the panics
// of kubernetes-sigs/kustomize#3659, for which Flux and Kargo serialise
// their builds, came from kyaml 0.13's unlocked schema initialisation.
// TestRenderConcurrently renders concurrently from a cold start, and
// make test runs it under the race detector (make race). Each build
// reads only its own in-memory tree.

// Build runs kustomize build on dir of tree (a path of the tree, such as
// "rendered/db/steps/01-create") in memory and returns the YAML stream.
func Build(tree Tree, dir string) ([]byte, error) {
	fs, err := memFS(tree)
	if err != nil {
		return nil, err
	}
	return build(fs, dir)
}

// memFS is an in-memory filesystem holding the files of t at their
// paths under "/". kustomize only reads it, so builds may share one.
func memFS(t Tree) (filesys.FileSystem, error) {
	fs := filesys.MakeFsInMemory()
	for p, data := range t {
		if err := fs.MkdirAll(path.Dir("/" + p)); err != nil {
			return nil, err
		}
		if err := fs.WriteFile("/"+p, data); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// build runs kustomize build on dir of fs and returns the YAML stream.
func build(fs filesys.FileSystem, dir string) ([]byte, error) {
	resMap, err := run(fs, dir)
	if err != nil {
		return nil, err
	}
	out, err := resourcesYAML(resMap)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return out, nil
}

func run(fs filesys.FileSystem, dir string) (resmap.ResMap, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(fs, "/"+dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return resMap, nil
}
